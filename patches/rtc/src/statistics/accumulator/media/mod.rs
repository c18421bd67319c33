pub(crate) mod app_provided;
pub(crate) mod audio_playout;
pub(crate) mod media_source;
