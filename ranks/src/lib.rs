//! vimp's rendezvous store: the nicknames registered for players' keys, the tokens a host
//! checks before it takes a player's name, and (to come) the global top.
//!
//! `vimp signal --db` opens a [`store::Store`] (SQLite by default, PostgreSQL for a rendezvous
//! that outgrows one process) and serves [`service::Ranks::router`] beside its signalling.
//! The protocol's side (key pairs, proofs, tokens and their checks) is
//! [`vimp_netcode::identity`]'s, so that a host checks tokens without this crate.

pub mod service;
pub mod store;
