//! The host's rapier2d world: stepping, contact events, deferred removals, queries, hashing and dumps.
//!
//! [`Physics`] is a plain struct (the engine wraps it as a Bevy resource) around
//! rapier 0.36's [`PhysicsWorld`], which bundles every piece of simulation state:
//! gravity, integration parameters, islands, broad and narrow phase, bodies,
//! colliders, joints. The world is top-down, so gravity is zero.
//!
//! # One tick
//!
//! ```text
//! game systems: apply impulses, insert bodies, queue_removal(..)
//! Physics::step()          → rapier step; contacts() now lists what started/stopped touching
//! game systems read contacts() (damage, pickups) and may queue_removal(..) more
//! Physics::apply_removals() → queued bodies and their colliders/joints are gone, in queue order
//! (dump here, between ticks: the removal queue is empty)
//! ```
//!
//! # Contacts
//!
//! Rapier only reports pairs in which at least one collider has
//! [`ActiveEvents::COLLISION_EVENTS`]; [`Physics::insert`] and
//! [`Physics::insert_collider`] set it, colliders inserted through
//! [`Physics::world_mut`] must set it themselves. Events are sorted by collider handle
//! (see [`ContactEvent`]) so their order never depends on rapier's internal traversal.
//!
//! # Queries
//!
//! Ray casts and overlap tests run against the broad-phase BVH, which rapier updates
//! during [`Physics::step`] (including the end-of-step positions). A collider inserted
//! or teleported through [`Physics::world_mut`] since the last step is therefore not
//! seen by queries until the next step; removed colliders are never reported.
//!
//! # Determinism and dumps
//!
//! rapier2d is built with `enhanced-determinism`: the same sequence of calls gives
//! bit-identical results on every machine. [`Physics`] serialises the whole
//! `PhysicsWorld` (rapier skips only its pipeline and CCD workspaces, which hold
//! scratch buffers and caches that a fresh pipeline rebuilds identically) plus the
//! removal queue and the last step's contacts. A restored `Physics` continues
//! bit-identically: nothing needs resetting or rebuilding after deserialisation (the
//! query structure is the serialised broad-phase BVH, and the pending
//! modified/removed collider lists are part of the serialised sets). The tests below
//! check this over 300 steps after a restore, with bodies inserted and removed on both
//! sides: state hash and contacts compared at every step, dump bytes every 50.
//!
//! What breaks bit-identical continuation, and must be avoided by the engine:
//! - iterating a `HashMap`/`HashSet` to decide the order of calls into the world
//!   (inserting, removing, applying impulses): handles are allocated in call order;
//! - `std`'s `sin`/`cos`/`atan2` in code feeding the world (use `libm`);
//! - user-defined `Shape`s (rapier cannot serialise them) and rapier's `parallel`
//!   feature (not enabled here);
//! - changing the rapier version between the dumping and the restoring process
//!   ([`Physics::DUMP_VERSION`] must be bumped whenever rapier is upgraded).

use std::fmt;
use std::sync::{Mutex, PoisonError};

use rapier2d::prelude::{
    ActiveEvents, Ball, ColliderBuilder, ColliderHandle, ColliderSet, CollisionEvent, ContactPair, EventHandler,
    PhysicsWorld, Pose, QueryFilter, Ray, Real, RigidBodyBuilder, RigidBodyHandle, RigidBodySet, SoftBodySet,
    SoftBodyTearEvent, Vector,
};
use serde::{Deserialize, Serialize};

use crate::engine::container::{self, ContainerError, ContainerKind, Fnv1a64};

/// Two colliders started or stopped touching during the last [`Physics::step`].
///
/// The pair is ordered so that `collider1` has the smaller handle (index, then
/// generation); `body1`/`user_data1` belong to `collider1`. Sensors report their
/// overlaps here too, with `sensor` set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContactEvent {
    /// `true` when the pair started touching, `false` when it stopped.
    pub started: bool,
    /// The collider with the smaller handle.
    pub collider1: ColliderHandle,
    /// The other collider.
    pub collider2: ColliderHandle,
    /// The body `collider1` is attached to (`None` for a standalone collider or one
    /// already removed, see `removed`).
    pub body1: Option<RigidBodyHandle>,
    /// The body `collider2` is attached to.
    pub body2: Option<RigidBodyHandle>,
    /// The `user_data` of `body1`, or of `collider1` itself when it has no body; 0 if gone.
    pub user_data1: u128,
    /// The `user_data` of `body2`, or of `collider2` itself when it has no body; 0 if gone.
    pub user_data2: u128,
    /// At least one of the two colliders is a sensor (an overlap, not a contact).
    pub sensor: bool,
    /// A "stopped" event caused by removing one of the colliders (rapier reports it at
    /// the step after the removal, once the removed side can no longer be looked up:
    /// its body is `None` and its user data 0). Games usually skip these.
    pub removed: bool,
}

/// The first collider hit by [`Physics::cast_ray`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RayHit {
    /// The collider hit.
    pub collider: ColliderHandle,
    /// Its body, `None` for a standalone collider.
    pub body: Option<RigidBodyHandle>,
    /// The body's `user_data`, or the collider's when it has no body.
    pub user_data: u128,
    /// Distance along the ray, in units of `dir` (world units for a unit `dir`).
    pub toi: Real,
    /// Where the ray hit: `origin + dir * toi`.
    pub point: Vector,
    /// The surface normal at `point`, pointing out of the collider. Zero when the ray
    /// starts inside the collider (then `toi` is 0).
    pub normal: Vector,
}

/// The host's physics world. See the module docs for the tick order and guarantees.
///
/// A world read from a dump is checked before it is used ([`Unchecked`]).
#[derive(Serialize, Deserialize, bevy::prelude::Resource)]
#[serde(try_from = "Unchecked")]
pub struct Physics {
    world: PhysicsWorld,
    removals: Vec<RigidBodyHandle>,
    contacts: Vec<ContactEvent>,
}

/// [`Physics`] as a dump spells it, before the checks a world must pass to be stepped: a
/// dump no honest host wrote can hold what rapier trusts, and fails on in ways no panic
/// guard catches (a broad-phase tree whose nodes make a cycle is recursed into until the
/// stack overflows).
#[derive(Deserialize)]
struct Unchecked {
    world: PhysicsWorld,
    removals: Vec<RigidBodyHandle>,
    contacts: Vec<ContactEvent>,
}

impl TryFrom<Unchecked> for Physics {
    type Error = String;

    fn try_from(u: Unchecked) -> Result<Physics, String> {
        check_tree(&u.world.broad_phase)?;
        Ok(Physics { world: u.world, removals: u.removals, contacts: u.contacts })
    }
}

/// The broad phase's tree is a tree: from the root, every inner node's children are in range
/// and reached once, as rapier's refit walks them (recursively). Read through the tree's
/// serialised form, the only view of it rapier gives.
fn check_tree(broad_phase: &rapier2d::geometry::BroadPhaseBvh) -> Result<(), String> {
    let value = serde_json::to_value(broad_phase).map_err(|e| format!("the broad phase: {e}"))?;
    let Some(nodes) = value["tree"]["nodes"].as_array() else {
        return Err("the broad phase has no tree".into());
    };
    // A node's data holds its leaf count in the low 30 bits: 1 is a leaf.
    let leaves = |node: &serde_json::Value| node["data"].as_u64().map(|d| d & 0x3fff_ffff);
    let root_leaves = match nodes.first() {
        None => return Ok(()),
        Some(root) => leaves(&root["left"]).zip(leaves(&root["right"])).map(|(l, r)| l + r),
    };
    // Up to two leaves, the root is all there is, and nothing walks below it.
    if root_leaves.ok_or("a broad-phase node without data")? <= 2 {
        return Ok(());
    }
    let mut seen = vec![false; nodes.len()];
    seen[0] = true;
    let mut stack = vec![0usize];
    while let Some(at) = stack.pop() {
        for side in ["left", "right"] {
            let node = &nodes[at][side];
            if leaves(node).ok_or("a broad-phase node without data")? == 1 {
                continue;
            }
            let child = node["children"].as_u64().ok_or("a broad-phase node without children")? as usize;
            if child >= nodes.len() || seen[child] {
                return Err(format!("the broad phase's node {at} points at node {child}: not a tree"));
            }
            seen[child] = true;
            stack.push(child);
        }
    }
    Ok(())
}

impl Physics {
    /// The [`ContainerKind`] of [`Physics::to_dump`].
    pub const DUMP_KIND: ContainerKind = ContainerKind::PHYSICS;
    /// The format version of [`Physics::to_dump`]. Bump it on any change to this
    /// struct's fields *and on every rapier2d upgrade*: bincode is not self-describing,
    /// so a dump of another layout would otherwise decode into garbage or fail oddly.
    pub const DUMP_VERSION: u16 = 1;

    /// An empty top-down world (zero gravity) stepping `dt` seconds per [`Physics::step`].
    pub fn new(dt: f32) -> Self {
        let mut world = PhysicsWorld::new();
        world.gravity = Vector::ZERO;
        world.integration_parameters.dt = dt;
        Self { world, removals: Vec::new(), contacts: Vec::new() }
    }

    /// The time step, in seconds.
    pub fn dt(&self) -> f32 {
        self.world.integration_parameters.dt
    }

    /// The rapier world, to read bodies, colliders, joints…
    pub fn world(&self) -> &PhysicsWorld {
        &self.world
    }

    /// The rapier world, to change it (apply impulses, set velocities, add joints…).
    ///
    /// Prefer [`Physics::queue_removal`] to removing bodies here, and remember that
    /// colliders inserted here only report contacts with `ActiveEvents::COLLISION_EVENTS`.
    pub fn world_mut(&mut self) -> &mut PhysicsWorld {
        &mut self.world
    }

    /// Inserts a body with one collider, turning on the collider's collision events.
    ///
    /// Other `active_events` flags set on the builder are kept.
    pub fn insert(&mut self, body: RigidBodyBuilder, collider: ColliderBuilder) -> (RigidBodyHandle, ColliderHandle) {
        self.world.insert(body, with_collision_events(collider))
    }

    /// Inserts one more collider, attached to `parent` (or standalone for `None`), with
    /// its collision events turned on.
    pub fn insert_collider(&mut self, collider: ColliderBuilder, parent: Option<RigidBodyHandle>) -> ColliderHandle {
        self.world.insert_collider(with_collision_events(collider), parent)
    }

    /// Advances the world by one `dt` and records the contact events of this step,
    /// replacing the previous step's (see [`Physics::contacts`]).
    pub fn step(&mut self) {
        let collector = Collector::default();
        self.world.step_with_events(&(), &collector);
        let mut contacts = collector.events.into_inner().unwrap_or_else(PoisonError::into_inner);
        // Stable: events of one pair keep rapier's emission order.
        contacts.sort_by_key(|e| (e.collider1.into_raw_parts(), e.collider2.into_raw_parts()));
        self.contacts = contacts;
    }

    /// The contact events of the last [`Physics::step`], sorted by
    /// (`collider1`, `collider2`) handle. Empty before the first step.
    pub fn contacts(&self) -> &[ContactEvent] {
        &self.contacts
    }

    /// Queues a body for removal by the next [`Physics::apply_removals`].
    ///
    /// Idempotent: queueing a body twice removes it once, at its first queue position.
    /// Safe to call with a handle that is already gone.
    pub fn queue_removal(&mut self, handle: RigidBodyHandle) {
        if !self.removals.contains(&handle) {
            self.removals.push(handle);
        }
    }

    /// The bodies queued for removal, in queue order.
    pub fn queued_removals(&self) -> &[RigidBodyHandle] {
        &self.removals
    }

    /// Removes the queued bodies, in the order they were queued, with their colliders
    /// and joints; returns how many bodies were actually removed (handles that were
    /// already gone are skipped). The engine calls it after the step.
    ///
    /// Contacts involving the removed colliders are reported by the next step as
    /// stopped events with [`ContactEvent::removed`] set.
    pub fn apply_removals(&mut self) -> usize {
        let mut removed = 0;
        for handle in std::mem::take(&mut self.removals) {
            if self.world.remove_body(handle).is_some() {
                removed += 1;
            }
        }
        removed
    }

    /// The first collider hit by the ray from `origin` along `dir` (normally unit
    /// length) within `max_toi`, among those `filter` accepts.
    ///
    /// Shapes are solid: a ray starting inside a collider hits it at `toi` 0. Use
    /// `QueryFilter::default().exclude_rigid_body(shooter)` to ignore the shooter, or
    /// `QueryFilter::exclude_sensors()` to go through trigger zones.
    pub fn cast_ray(&self, origin: Vector, dir: Vector, max_toi: Real, filter: QueryFilter<'_>) -> Option<RayHit> {
        let ray = Ray::new(origin, dir);
        let (collider, hit) = self.world.cast_ray_and_get_normal(&ray, max_toi, true, filter)?;
        let (body, user_data) = self.owner(collider);
        Some(RayHit {
            collider,
            body,
            user_data,
            toi: hit.time_of_impact,
            point: ray.point_at(hit.time_of_impact),
            normal: hit.normal,
        })
    }

    /// The bodies with at least one collider overlapping the disc at `center` of
    /// `radius` (sensors included), each once, with their `user_data`, sorted by handle.
    /// Standalone colliders are not reported. Made for blast damage.
    pub fn intersect_circle(&self, center: Vector, radius: Real) -> Vec<(RigidBodyHandle, u128)> {
        self.intersect_circle_with(center, radius, QueryFilter::default())
    }

    /// [`Physics::intersect_circle`] among the colliders `filter` accepts.
    pub fn intersect_circle_with(
        &self,
        center: Vector,
        radius: Real,
        filter: QueryFilter<'_>,
    ) -> Vec<(RigidBodyHandle, u128)> {
        let ball = Ball::new(radius);
        let mut hits: Vec<(RigidBodyHandle, u128)> = self
            .world
            .intersect_shape(Pose::from_translation(center), &ball, filter)
            .filter_map(|(_, collider)| {
                let body = collider.parent()?;
                Some((body, self.world.bodies.get(body)?.user_data))
            })
            .collect();
        hits.sort_by_key(|(body, _)| body.into_raw_parts());
        hits.dedup_by_key(|(body, _)| *body);
        hits
    }

    /// A hash of the dynamic state of every body, to compare two simulations cheaply
    /// (the divergence detector sends it every 30 ticks).
    ///
    /// FNV-1a 64 ([`Fnv1a64`]), seedless and platform-independent, over the body count
    /// then, for each body in handle order: index and generation, translation,
    /// rotation (cos, sin), linear and angular velocity (all as `f32` bit patterns),
    /// enabled and sleeping flags. Colliders, contacts and solver caches are not
    /// included: compare [`Physics::to_dump`] bytes for that.
    pub fn state_hash(&self) -> u64 {
        let mut h = Fnv1a64::new();
        h.write_u64(self.world.bodies.len() as u64);
        for (handle, body) in self.world.bodies.iter() {
            let (index, generation) = handle.into_raw_parts();
            h.write_u32(index);
            h.write_u32(generation);
            let t = body.translation();
            h.write_f32(t.x);
            h.write_f32(t.y);
            let r = body.rotation();
            h.write_f32(r.re);
            h.write_f32(r.im);
            let v = body.linvel();
            h.write_f32(v.x);
            h.write_f32(v.y);
            h.write_f32(body.angvel());
            h.write_u8(u8::from(body.is_enabled()));
            h.write_u8(u8::from(body.is_sleeping()));
        }
        h.finish()
    }

    /// This world as a standalone dump ([`Physics::DUMP_KIND`], [`Physics::DUMP_VERSION`]).
    ///
    /// A checkpoint that embeds `Physics` in a larger struct serialises it directly
    /// instead; both go through [`container::encode`].
    pub fn to_dump(&self) -> Result<Vec<u8>, ContainerError> {
        container::encode(Self::DUMP_KIND, Self::DUMP_VERSION, self)
    }

    /// Restores a world written by [`Physics::to_dump`]; it continues bit-identically.
    pub fn from_dump(bytes: &[u8]) -> Result<Self, ContainerError> {
        container::decode(Self::DUMP_KIND, Self::DUMP_VERSION, bytes)
    }

    /// A collider's body and the user data games match on (the body's, or the
    /// collider's own for a standalone collider).
    fn owner(&self, collider: ColliderHandle) -> (Option<RigidBodyHandle>, u128) {
        owner_in(&self.world.bodies, &self.world.colliders, collider)
    }
}

impl fmt::Debug for Physics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Physics")
            .field("dt", &self.dt())
            .field("bodies", &self.world.bodies.len())
            .field("colliders", &self.world.colliders.len())
            .field("removals", &self.removals)
            .field("contacts", &self.contacts.len())
            .finish_non_exhaustive()
    }
}

/// Adds `COLLISION_EVENTS` to a collider builder's active events.
fn with_collision_events(mut collider: ColliderBuilder) -> ColliderBuilder {
    collider.active_events |= ActiveEvents::COLLISION_EVENTS;
    collider
}

/// See [`Physics::owner`].
fn owner_in(
    bodies: &RigidBodySet,
    colliders: &ColliderSet,
    collider: ColliderHandle,
) -> (Option<RigidBodyHandle>, u128) {
    let Some(co) = colliders.get(collider) else {
        return (None, 0);
    };
    match co.parent() {
        Some(body) => (Some(body), bodies.get(body).map_or(0, |b| b.user_data)),
        None => (None, co.user_data),
    }
}

/// Collects collision events during a step. rapier wants `Sync` handlers, hence the
/// mutex (uncontended: rapier's `parallel` feature is off).
#[derive(Default)]
struct Collector {
    events: Mutex<Vec<ContactEvent>>,
}

impl EventHandler for Collector {
    fn handle_collision_event(
        &self,
        bodies: &RigidBodySet,
        colliders: &ColliderSet,
        event: CollisionEvent,
        _contact_pair: Option<&ContactPair>,
    ) {
        let (mut c1, mut c2) = (event.collider1(), event.collider2());
        if c2.into_raw_parts() < c1.into_raw_parts() {
            std::mem::swap(&mut c1, &mut c2);
        }
        let (body1, user_data1) = owner_in(bodies, colliders, c1);
        let (body2, user_data2) = owner_in(bodies, colliders, c2);
        let contact = ContactEvent {
            started: event.started(),
            collider1: c1,
            collider2: c2,
            body1,
            body2,
            user_data1,
            user_data2,
            sensor: event.sensor(),
            removed: event.removed(),
        };
        self.events.lock().unwrap_or_else(PoisonError::into_inner).push(contact);
    }

    fn handle_contact_force_event(&self, _: Real, _: &RigidBodySet, _: &ColliderSet, _: &ContactPair, _: Real) {}

    fn handle_soft_body_tear_event(&self, _: &SoftBodySet, _: &SoftBodyTearEvent) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::container::ContainerError;
    use rapier2d::prelude::QueryFilterFlags;

    const DT: f32 = 1.0 / 120.0;
    const WALL: u128 = 0xAAAA;
    const BOX: u128 = 0x7777;

    /// A fixed wall at x = 5 (half-width 0.5) and a dynamic box at the origin.
    fn box_and_wall() -> (Physics, RigidBodyHandle, RigidBodyHandle) {
        let mut p = Physics::new(DT);
        let (wall, _) = p.insert(
            RigidBodyBuilder::fixed().translation(Vector::new(5.0, 0.0)).user_data(WALL),
            ColliderBuilder::cuboid(0.5, 3.0),
        );
        let (boxed, _) = p.insert(RigidBodyBuilder::dynamic().user_data(BOX), ColliderBuilder::cuboid(0.5, 0.5));
        (p, wall, boxed)
    }

    #[test]
    fn physics_is_send_and_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<Physics>();
    }

    #[test]
    fn new_is_top_down_with_the_given_dt() {
        let p = Physics::new(DT);
        assert_eq!(p.world().gravity, Vector::ZERO);
        assert_eq!(p.dt(), DT);
        assert!(p.contacts().is_empty());
    }

    #[test]
    fn a_box_pushed_into_a_wall_reports_a_started_contact() {
        let (mut p, wall, boxed) = box_and_wall();
        p.world_mut().bodies[boxed].set_linvel(Vector::new(20.0, 0.0), true);
        let mut started = None;
        for step in 0..120 {
            p.step();
            assert!(p.contacts().iter().all(|c| !c.removed), "nothing was removed");
            if let Some(c) = p.contacts().iter().find(|c| c.started) {
                started = Some((step, *c));
                break;
            }
        }
        let (step, c) = started.expect("the box reached the wall within a second");
        // The gap is 4 units at 20 u/s: 0.2 s = 24 steps, minus the prediction margin.
        assert!((20..=25).contains(&step), "contact at step {step}");
        assert!(!c.sensor);
        // The wall was inserted first, so its collider has the smaller handle.
        assert_eq!((c.body1, c.user_data1), (Some(wall), WALL));
        assert_eq!((c.body2, c.user_data2), (Some(boxed), BOX));
        assert_eq!(p.contacts().len(), 1, "{:?}", p.contacts());
        assert!(p.world().bodies[boxed].translation().x < 4.1, "the wall stopped the box");
    }

    #[test]
    fn contacts_stop_and_last_one_step() {
        let (mut p, _, boxed) = box_and_wall();
        p.world_mut().bodies[boxed].set_linvel(Vector::new(20.0, 0.0), true);
        while !p.contacts().iter().any(|c| c.started) {
            p.step();
        }
        p.step();
        assert!(p.contacts().is_empty(), "events last one step: {:?}", p.contacts());
        p.world_mut().bodies[boxed].set_linvel(Vector::new(-20.0, 0.0), true);
        let mut stopped = false;
        for _ in 0..30 {
            p.step();
            stopped |= p.contacts().iter().any(|c| !c.started && !c.removed && c.user_data2 == BOX);
        }
        assert!(stopped, "moving away reports a stopped contact");
    }

    #[test]
    fn a_sensor_reports_overlaps() {
        let mut p = Physics::new(DT);
        let (zone, _) = p.insert(RigidBodyBuilder::fixed().user_data(1), ColliderBuilder::ball(1.0).sensor(true));
        let (ball, _) = p.insert(
            RigidBodyBuilder::dynamic().translation(Vector::new(-3.0, 0.0)).linvel(Vector::new(10.0, 0.0)).user_data(2),
            ColliderBuilder::ball(0.25),
        );
        let mut seen = Vec::new();
        for _ in 0..60 {
            p.step();
            seen.extend(p.contacts().iter().map(|c| (c.started, c.sensor, c.body1, c.body2)));
        }
        assert_eq!(
            seen,
            [(true, true, Some(zone), Some(ball)), (false, true, Some(zone), Some(ball))],
            "enter then leave"
        );
    }

    #[test]
    fn queue_removal_twice_removes_once_with_colliders() {
        let (mut p, wall, boxed) = box_and_wall();
        let box_collider = p.world().bodies[boxed].colliders()[0];
        p.queue_removal(boxed);
        p.queue_removal(wall);
        p.queue_removal(boxed);
        assert_eq!(p.queued_removals(), [boxed, wall], "first queue position kept");
        assert_eq!(p.apply_removals(), 2);
        assert!(p.world().bodies.get(boxed).is_none());
        assert!(p.world().bodies.get(wall).is_none());
        assert!(p.world().colliders.get(box_collider).is_none(), "colliders go with their body");
        assert_eq!(p.world().colliders.len(), 0);
        assert!(p.queued_removals().is_empty());
        p.queue_removal(boxed);
        assert_eq!(p.apply_removals(), 0, "an already removed body is skipped");
        p.step();
    }

    #[test]
    fn removing_a_touching_body_reports_a_removed_stop_next_step() {
        let (mut p, _, boxed) = box_and_wall();
        p.world_mut().bodies[boxed].set_linvel(Vector::new(20.0, 0.0), true);
        while !p.contacts().iter().any(|c| c.started) {
            p.step();
        }
        p.queue_removal(boxed);
        assert_eq!(p.apply_removals(), 1);
        p.step();
        let c = p.contacts();
        assert_eq!(c.len(), 1, "{c:?}");
        assert!(!c[0].started && c[0].removed);
        assert_eq!((c[0].user_data1, c[0].body2, c[0].user_data2), (WALL, None, 0));
    }

    #[test]
    fn cast_ray_hits_the_wall_and_respects_the_filter() {
        let (mut p, wall, boxed) = box_and_wall();
        p.step(); // queries see colliders once a step has put them in the BVH
        let hit = p.cast_ray(Vector::new(-3.0, 0.0), Vector::new(1.0, 0.0), 100.0, QueryFilter::default()).unwrap();
        // The box's left face is at x = -0.5: 2.5 from the origin.
        assert_eq!((hit.body, hit.user_data), (Some(boxed), BOX));
        assert!((hit.toi - 2.5).abs() < 1e-4, "{}", hit.toi);
        assert!((hit.point - Vector::new(-0.5, 0.0)).length() < 1e-4, "{:?}", hit.point);
        assert!((hit.normal - Vector::new(-1.0, 0.0)).length() < 1e-4, "{:?}", hit.normal);

        let past_box = QueryFilter::default().exclude_rigid_body(boxed);
        let hit = p.cast_ray(Vector::new(-3.0, 0.0), Vector::new(1.0, 0.0), 100.0, past_box).unwrap();
        assert_eq!((hit.body, hit.user_data), (Some(wall), WALL));
        assert!((hit.toi - 7.5).abs() < 1e-4, "{}", hit.toi);

        assert_eq!(p.cast_ray(Vector::new(-3.0, 0.0), Vector::new(1.0, 0.0), 2.0, QueryFilter::default()), None);
        assert_eq!(p.cast_ray(Vector::new(-3.0, 0.0), Vector::new(-1.0, 0.0), 100.0, QueryFilter::default()), None);
        let only_dynamic = QueryFilter::from(QueryFilterFlags::ONLY_DYNAMIC);
        assert_eq!(p.cast_ray(Vector::new(2.0, 0.0), Vector::new(1.0, 0.0), 100.0, only_dynamic), None);
    }

    #[test]
    fn intersect_circle_lists_each_body_once_in_handle_order() {
        let mut p = Physics::new(DT);
        let mut bodies = Vec::new();
        for i in 0..5u8 {
            let (b, _) = p.insert(
                RigidBodyBuilder::dynamic().translation(Vector::new(f32::from(i) * 2.0, 0.0)).user_data(u128::from(i)),
                ColliderBuilder::ball(0.5),
            );
            bodies.push(b);
        }
        // A second collider on body 1 must not list it twice.
        p.insert_collider(ColliderBuilder::ball(0.5).translation(Vector::new(0.0, 0.6)), Some(bodies[1]));
        p.insert_collider(ColliderBuilder::ball(0.5).translation(Vector::new(3.0, 0.0)), None);
        p.step();
        // Disc around x = 3 of radius 1.2 reaches the balls at 2 and 4 (edges at 2.5, 3.5).
        assert_eq!(p.intersect_circle(Vector::new(3.0, 0.0), 1.2), [(bodies[1], 1), (bodies[2], 2)]);
        assert_eq!(
            p.intersect_circle(Vector::new(3.0, 0.0), 3.0),
            [(bodies[0], 0), (bodies[1], 1), (bodies[2], 2), (bodies[3], 3)]
        );
        assert_eq!(p.intersect_circle(Vector::new(100.0, 0.0), 3.0), []);
    }

    /// A small arena: walls, a row of boxes, a few "movers" that get pushed around,
    /// a sensor zone, and a joint — every part of the world the game uses.
    fn arena() -> (Physics, Vec<RigidBodyHandle>) {
        let mut p = Physics::new(DT);
        for (x, y, hx, hy) in
            [(0.0, -10.0, 12.0, 0.5), (0.0, 10.0, 12.0, 0.5), (-12.0, 0.0, 0.5, 10.0), (12.0, 0.0, 0.5, 10.0)]
        {
            p.insert(RigidBodyBuilder::fixed().translation(Vector::new(x, y)), ColliderBuilder::cuboid(hx, hy));
        }
        for i in 0..6u8 {
            p.insert(
                RigidBodyBuilder::dynamic()
                    .translation(Vector::new(-5.0 + 2.0 * f32::from(i), 3.0))
                    .linear_damping(2.0)
                    .angular_damping(2.0)
                    .user_data(100 + u128::from(i)),
                ColliderBuilder::cuboid(0.4, 0.4),
            );
        }
        p.insert(RigidBodyBuilder::fixed(), ColliderBuilder::ball(2.0).sensor(true));
        let mut movers = Vec::new();
        for i in 0..4u8 {
            let (t, _) = p.insert(
                RigidBodyBuilder::dynamic()
                    .translation(Vector::new(-6.0 + 4.0 * f32::from(i), -4.0))
                    .linear_damping(1.0)
                    .angular_damping(3.0)
                    .user_data(u128::from(i)),
                ColliderBuilder::cuboid(0.6, 0.4).density(2.0),
            );
            movers.push(t);
        }
        let (attached, _) = p.insert(
            RigidBodyBuilder::dynamic().translation(Vector::new(-6.0, -3.0)),
            ColliderBuilder::cuboid(0.1, 0.5).density(0.1),
        );
        let joint = rapier2d::prelude::RevoluteJointBuilder::new().local_anchor2(Vector::new(0.0, -1.0));
        p.world_mut().insert_impulse_joint(movers[0], attached, joint);
        (p, movers)
    }

    /// What the game does in one tick, driven only by the tick number and a seeded rng:
    /// impulses on the movers, a projectile every 40 ticks (removed on its first contact
    /// or after 90 ticks), then the step and the removals.
    fn tick(p: &mut Physics, movers: &[RigidBodyHandle], n: u32, shots: &mut Vec<(RigidBodyHandle, u32)>) {
        let mut rng = crate::engine::rng::SplitMix64::new(u64::from(n));
        for &t in movers {
            if let Some(body) = p.world_mut().bodies.get_mut(t) {
                let impulse = Vector::new(rng.range_f32(-1.0, 1.0), rng.range_f32(-1.0, 1.0)) * 0.8;
                body.apply_impulse(impulse, true);
                body.apply_torque_impulse(rng.range_f32(-0.05, 0.05), true);
            }
        }
        if n.is_multiple_of(40) {
            let from = movers[(n / 40) as usize % movers.len()];
            if let Some(pos) = p.world().bodies.get(from).map(|b| b.translation()) {
                let (shot, _) = p.insert(
                    RigidBodyBuilder::dynamic()
                        .translation(pos + Vector::new(0.0, 1.0))
                        .linvel(Vector::new(rng.range_f32(-3.0, 3.0), 25.0))
                        .ccd_enabled(true)
                        .user_data(999),
                    ColliderBuilder::ball(0.1),
                );
                shots.push((shot, n));
            }
        }
        p.step();
        let hit: Vec<RigidBodyHandle> = p
            .contacts()
            .iter()
            .filter(|c| c.started)
            .flat_map(|c| [(c.body1, c.user_data1), (c.body2, c.user_data2)])
            .filter_map(|(b, u)| (u == 999).then_some(b).flatten())
            .collect();
        for h in hit {
            p.queue_removal(h);
        }
        for (shot, born) in shots.iter() {
            if n - born > 90 {
                p.queue_removal(*shot);
            }
        }
        p.apply_removals();
        shots.retain(|(s, _)| p.world().bodies.get(*s).is_some());
    }

    #[test]
    fn two_worlds_built_alike_stay_equal() {
        let (mut a, movers_a) = arena();
        let (mut b, movers_b) = arena();
        let (mut shots_a, mut shots_b) = (Vec::new(), Vec::new());
        assert_eq!(a.state_hash(), b.state_hash());
        let start = a.state_hash();
        for n in 0..300 {
            tick(&mut a, &movers_a, n, &mut shots_a);
            tick(&mut b, &movers_b, n, &mut shots_b);
            assert_eq!(a.state_hash(), b.state_hash(), "diverged at tick {n}");
            assert_eq!(a.contacts(), b.contacts(), "contacts diverged at tick {n}");
        }
        assert_ne!(a.state_hash(), start, "the scene moved");
    }

    #[test]
    fn state_hash_sees_one_ulp() {
        let (mut p, _, boxed) = box_and_wall();
        let before = p.state_hash();
        let body = &mut p.world_mut().bodies[boxed];
        let x = body.translation().x;
        body.set_translation(Vector::new(x.next_up(), 0.0), false);
        assert_ne!(p.state_hash(), before);
    }

    #[test]
    fn a_broad_phase_tree_with_a_cycle_is_refused_before_it_is_stepped() {
        let (mut world, movers) = arena();
        let mut shots = Vec::new();
        for n in 0..30 {
            tick(&mut world, &movers, n, &mut shots);
        }
        let broad_phase = &world.world().broad_phase;
        assert_eq!(check_tree(broad_phase), Ok(()), "a stepped world's tree is a tree");
        let mut value = serde_json::to_value(broad_phase).expect("serialises");
        let nodes = value["tree"]["nodes"].as_array_mut().expect("a tree");
        assert!(nodes.len() > 2, "the arena's tree has inner nodes: {}", nodes.len());
        // Point an inner node back at the root.
        let inner = nodes.iter().position(|n| n["left"]["data"].as_u64().is_some_and(|d| d & 0x3fff_ffff > 1));
        let inner = inner.expect("an inner node");
        nodes[inner]["left"]["children"] = serde_json::json!(0);
        let crafted: rapier2d::geometry::BroadPhaseBvh = serde_json::from_value(value).expect("still reads");
        let refused = check_tree(&crafted).expect_err("a cycle");
        assert!(refused.contains("not a tree"), "{refused}");
    }

    #[test]
    fn a_restored_dump_continues_bit_identically() {
        let (mut original, movers) = arena();
        let mut shots = Vec::new();
        let mut contacts_seen = 0;
        let mut removals_seen = 0;
        for n in 0..150 {
            tick(&mut original, &movers, n, &mut shots);
            contacts_seen += original.contacts().len();
            removals_seen += original.contacts().iter().filter(|c| c.removed).count();
        }
        assert!(contacts_seen > 0 && removals_seen > 0, "the first half exercises contacts and removals");
        // Dump between ticks, right after removals: rapier's pending removed-collider
        // list (applied by the next step) is non-empty and must travel with the dump.
        let crate_body = original.world().bodies.iter().find(|(_, b)| b.user_data == 103).map(|(h, _)| h).unwrap();
        original.queue_removal(crate_body);
        assert_eq!(original.apply_removals(), 1);
        let bytes = original.to_dump().unwrap();
        let mut restored = Physics::from_dump(&bytes).unwrap();
        let mut shots_restored = shots.clone();
        assert_eq!(restored.state_hash(), original.state_hash());
        assert!(restored.to_dump().unwrap() == bytes, "restoring loses nothing that is dumped");
        assert_eq!(restored.contacts(), original.contacts());
        // Queries work on the restored world without a step.
        let probe =
            |p: &Physics| p.cast_ray(Vector::new(-11.0, -4.0), Vector::new(1.0, 0.0), 30.0, QueryFilter::default());
        assert_eq!(probe(&restored), probe(&original));
        assert!(probe(&original).is_some());
        assert_eq!(restored.intersect_circle(Vector::ZERO, 6.0), original.intersect_circle(Vector::ZERO, 6.0));

        for n in 150..450 {
            tick(&mut original, &movers, n, &mut shots);
            tick(&mut restored, &movers, n, &mut shots_restored);
            assert_eq!(restored.state_hash(), original.state_hash(), "diverged {} ticks after the restore", n - 149);
            assert_eq!(restored.contacts(), original.contacts(), "contacts diverged at tick {n}");
            if n.is_multiple_of(50) {
                assert!(restored.to_dump().unwrap() == original.to_dump().unwrap(), "dump bytes differ at tick {n}");
            }
        }
        assert!(restored.to_dump().unwrap() == original.to_dump().unwrap(), "dump bytes differ at the end");
    }

    #[test]
    fn a_damaged_dump_is_refused() {
        let (p, _, _) = box_and_wall();
        let bytes = p.to_dump().unwrap();
        assert!(bytes.len() > 200, "a world with two bodies is not tiny: {} bytes", bytes.len());
        assert_eq!(
            Physics::from_dump(&bytes[..100]).unwrap_err(),
            ContainerError::Truncated { need: bytes.len(), have: 100 }
        );
        let mut other_version = bytes.clone();
        other_version[4] ^= 1;
        assert_eq!(
            Physics::from_dump(&other_version).unwrap_err(),
            ContainerError::Version { found: Physics::DUMP_VERSION ^ 1, expected: Physics::DUMP_VERSION }
        );
        let mut flipped = bytes;
        let last = flipped.len() - 1;
        flipped[last] ^= 0x40;
        assert!(matches!(Physics::from_dump(&flipped), Err(ContainerError::Checksum { .. })));
    }
}
