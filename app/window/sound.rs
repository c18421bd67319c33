//! Sounds (the `audio` cargo feature): the host's `SOUND` messages and the game's own
//! cues (shots, blasts, a round start), quieter the farther from the camera.
//!
//! Without the feature the queue still fills and is simply dropped, so the rest of the
//! window does not care whether sound is built in. Building with it needs the ALSA
//! headers on Linux (`libasound2-dev`).

use bevy::prelude::*;

/// Sounds to play this frame: a name from `assets/sounds/` and where it happened (map coordinates).
#[derive(Resource, Debug, Default)]
pub struct SoundQueue(pub Vec<(String, Option<[f32; 2]>)>);

/// How far (world units) a sound carries.
#[cfg(feature = "audio")]
const HEARING: f32 = 1400.0;

/// Plays (or, without the `audio` feature, drops) the queued sounds.
pub(crate) struct SoundPlugin;

impl Plugin for SoundPlugin {
    fn build(&self, app: &mut App) {
        app.init_resource::<SoundQueue>().add_systems(PostUpdate, play);
    }
}

#[cfg(feature = "audio")]
fn play(
    mut commands: Commands,
    mut queue: ResMut<SoundQueue>,
    assets: Res<AssetServer>,
    active: Option<ResMut<crate::window::ActiveMatch>>,
    camera: Query<&Transform, With<crate::window::game::MainCamera>>,
    mut unknown: Local<std::collections::HashSet<String>>,
) {
    use bevy::audio::Volume;
    if let Some(mut active) = active {
        for name in active.get().sounds.drain(..) {
            queue.0.push((name, None));
        }
    }
    let ear = camera.single().map(|t| [t.translation.x, -t.translation.y]).ok();
    for (name, at) in queue.0.drain(..) {
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-') {
            continue; // a name from the wire never becomes a path outside assets/sounds
        }
        let path = format!("sounds/{name}.wav");
        if !crate::shipped::has_asset(&path) {
            // A host may name sounds this build does not ship: said once in the log, not played.
            if unknown.len() < 64 && unknown.insert(name) {
                info!("no sound {path} in this build; the host's sound is not played");
            }
            continue;
        }
        let volume = match (at, ear) {
            (Some(p), Some(e)) => 1.0 - ((p[0] - e[0]).hypot(p[1] - e[1]) / HEARING).min(1.0),
            _ => 1.0,
        };
        if volume <= 0.02 {
            continue;
        }
        commands.spawn((
            AudioPlayer::new(assets.load::<AudioSource>(path)),
            PlaybackSettings::DESPAWN.with_volume(Volume::Linear(volume * 0.7)),
        ));
    }
}

#[cfg(not(feature = "audio"))]
fn play(mut queue: ResMut<SoundQueue>, active: Option<ResMut<crate::window::ActiveMatch>>) {
    queue.0.clear();
    if let Some(mut active) = active {
        active.get().sounds.clear();
    }
}
