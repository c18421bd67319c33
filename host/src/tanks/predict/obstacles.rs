//! The bodies near the tank that the prediction world holds: other tanks where the latest
//! snapshot shows them (kinematic), the map's boxes (dynamic), and how a frame's rows become
//! [`Obstacle`]s.

use super::*;

/// Names an obstacle across snapshots: the snapshot key its rows come in and its row id.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObstacleId {
    /// The snapshot key id (`m1` for tanks, the map's set key for boxes).
    pub key: u8,
    /// The row id in that key.
    pub index: u32,
}

/// Another body near the tank, as the latest snapshot shows it: a box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Obstacle {
    /// Which body.
    pub id: ObstacleId,
    /// The body's position.
    pub x: f32,
    /// The body's position.
    pub y: f32,
    /// The body's rotation, rad.
    pub angle: f32,
    /// Half the box's size along the body's own axes.
    pub half_extents: [f32; 2],
    /// The box's centre in the body's own frame (map boxes sit on their corner).
    pub offset: [f32; 2],
    /// Friction of its collider.
    pub friction: f32,
    /// Restitution of its collider.
    pub restitution: f32,
    /// Its velocity `[vx, vy, angvel]` as the snapshot shows it (zero for a row without
    /// its velocity tail: a box at rest).
    pub velocity: [f32; 3],
    /// Its level and its height above it, as its row shows them (0 on a flat map).
    pub level: (u8, f32),
}

impl Predictor {
    /// Puts the obstacles near the tank into the prediction world, replacing the previous
    /// set (far ones, and all while there is no tank, are left out): other tanks as
    /// kinematic bodies where the snapshot shows them, the map's boxes as dynamic bodies
    /// (a new one where the snapshot shows it; one already there where the next rewind puts
    /// it). Call it with a frame's obstacles right before [`Predictor::on_frame`] with that
    /// frame.
    pub fn set_obstacles(&mut self, obstacles: &[Obstacle]) {
        self.box_states.clear();
        let centre = self.motion().map(|m| (m.x, m.y));
        let near: BTreeMap<ObstacleId, &Obstacle> = obstacles
            .iter()
            .filter(|o| o.id != ObstacleId { key: key::TANKS, index: self.player.0 as u32 })
            .filter(|o| {
                centre.is_some_and(|(x, y)| {
                    let reach =
                        libm::hypotf(o.half_extents[0], o.half_extents[1]) + libm::hypotf(o.offset[0], o.offset[1]);
                    libm::hypotf(o.x - x, o.y - y) - reach <= self.config.obstacle_radius
                })
            })
            .map(|o| (o.id, o))
            .collect();
        let gone: Vec<ObstacleId> = self.obstacles.keys().filter(|id| !near.contains_key(id)).copied().collect();
        for id in gone {
            if let Some(handle) = self.obstacles.remove(&id) {
                self.physics.queue_removal(handle);
            }
        }
        self.physics.apply_removals();
        for (id, o) in near {
            // A map box is a dynamic body the tank pushes; another tank is kinematic.
            let movable = Some(id.key) == self.crate_key;
            let handle = self.obstacles.get(&id).copied();
            let groups = self.obstacle_groups(o, movable);
            match handle.and_then(|h| self.physics.world_mut().bodies.get_mut(h)) {
                Some(_) if movable => self.box_states.extend(handle.map(|h| (h, *o))),
                Some(b) => {
                    b.set_translation(Vector::new(o.x, o.y), true);
                    b.set_rotation(Rotation::from_angle(o.angle), true);
                }
                None if movable => {
                    let [w, h] = o.half_extents.map(|e| e * 2.0);
                    let (body, mut collider) = dynamic_box(id.index as usize, Vector::new(o.x, o.y), o.angle, w, h);
                    if let Some(groups) = groups {
                        collider = collider.collision_groups(groups);
                    }
                    let body = body.linvel(Vector::new(o.velocity[0], o.velocity[1])).angvel(o.velocity[2]);
                    let (handle, _) = self.physics.insert(body, collider);
                    self.obstacles.insert(id, handle);
                }
                None => {
                    let body = RigidBodyBuilder::kinematic_position_based()
                        .translation(Vector::new(o.x, o.y))
                        .rotation(o.angle);
                    let mut collider = ColliderBuilder::cuboid(o.half_extents[0], o.half_extents[1])
                        .translation(Vector::new(o.offset[0], o.offset[1]))
                        .friction(o.friction)
                        .restitution(o.restitution);
                    if let Some(groups) = groups {
                        collider = collider.collision_groups(groups);
                    }
                    let (handle, _) = self.physics.insert(body, collider);
                    self.obstacles.insert(id, handle);
                }
            }
            if let (Some(groups), Some(&handle)) = (groups, self.obstacles.get(&id)) {
                set_body_groups(self.physics.world_mut(), handle, groups);
            }
        }
    }

    /// An obstacle's collision groups on a layered map (`None` on a flat one): a box on its
    /// row's level (falling while its z is above it), another tank as its row says it stands.
    pub(super) fn obstacle_groups(&self, o: &Obstacle, movable: bool) -> Option<InteractionGroups> {
        let levels = Some(self.map.levels()).filter(|l| l.is_layered())?;
        let (level, z) = o.level;
        let p = [o.x, o.y];
        Some(if movable {
            if z > 0.0 { LevelState { level, z, fall: 1 } } else { LevelState::on(level) }.groups(levels, p, false)
        } else {
            state_from_row(levels, &self.fall, self.dt(), level, z, p, LevelState::default()).groups(levels, p, true)
        })
    }

    /// Sets the other tanks as the player sees them drawn (`m1` rows by id, at the
    /// interpolation's render time): a shot fired from now on is traced against these hulls,
    /// and against walls and boxes as predicted, as the host judges a shot whose press says
    /// what its shooter saw ([`crate::tanks::lagcomp`]). Without it, shots are traced against
    /// the tanks of the latest frame.
    pub fn set_seen<'a>(&mut self, tanks: impl IntoIterator<Item = (u32, &'a Row)>) {
        let seen = tanks
            .into_iter()
            .filter(|(index, _)| *index != u32::from(self.player.0))
            .map(|(index, row)| {
                let o = self.tank_obstacle(index, row);
                SeenHull {
                    player: PlayerId(index.min(u32::from(u8::MAX)) as u8),
                    body: self.obstacles.get(&o.id).copied().unwrap_or_else(RigidBodyHandle::invalid),
                    tag: encode_tag(TANK_KIND, u64::from(index)),
                    pose: Pose::new(Vector::new(o.x, o.y), o.angle),
                    groups: self.obstacle_groups(&o, false).unwrap_or_default(),
                }
            })
            .collect();
        self.seen = Some(seen);
    }

    /// Tank `index` where its `m1` row puts it, as an obstacle.
    pub(super) fn tank_obstacle(&self, index: u32, row: &Row) -> Obstacle {
        let (t, model) = (&self.rows.tanks, &self.rules.models.tank);
        Obstacle {
            id: ObstacleId { key: key::TANKS, index },
            x: t.x.f32(row),
            y: t.y.f32(row),
            angle: t.angle.f32(row),
            half_extents: [model.length / 2.0, model.width / 2.0],
            offset: [0.0; 2],
            friction: TANK_FRICTION,
            restitution: TANK_RESTITUTION,
            velocity: [0.0; 3],
            level: t.level(row),
        }
    }

    /// The obstacles a frame shows: other living tanks (`m1`) and the map's boxes (the
    /// map's set key), for [`Predictor::set_obstacles`].
    pub fn obstacles_from(&self, frame: &Frame) -> Vec<Obstacle> {
        let rows =
            |id: u8| frame.block(id).into_iter().flat_map(|b| b.entries()).filter_map(|(i, row)| Some((i?, row?)));
        let mut out: Vec<Obstacle> = rows(key::TANKS).map(|(index, row)| self.tank_obstacle(index, row)).collect();
        if let Some((crate_key, b)) = self.crate_key.zip(self.box_fields) {
            out.extend(rows(crate_key).filter_map(|(index, row)| {
                let &(w, h) = self.boxes.get(index as usize)?;
                Some(Obstacle {
                    id: ObstacleId { key: crate_key, index },
                    x: b.x.f32(row),
                    y: b.y.f32(row),
                    angle: b.angle.f32(row),
                    half_extents: [w / 2.0, h / 2.0],
                    offset: [w / 2.0, h / 2.0],
                    friction: DEFAULT_FRICTION,
                    restitution: DEFAULT_RESTITUTION,
                    velocity: b.velocity(row),
                    level: b.level(row),
                })
            }));
        }
        out
    }
}
