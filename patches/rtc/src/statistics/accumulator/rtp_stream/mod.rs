//! RTP stream statistics accumulators for inbound and outbound streams.

pub mod inbound;
pub mod outbound;
