//! What vimp leaves behind for a player to send: its version with the commit it was built
//! from, a log file in the data folder (rotated daily, a week kept, at `--log-level`), and a
//! crash report beside it when a panic ends it.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// The version and the commit it was built from (`0.1.0 (a1b2c3d4e5f6)`), as `--version` says.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("VIMP_COMMIT"), ")");

/// How many daily log files are kept.
const KEPT_LOGS: usize = 7;

/// The level of the log file (`--log-level`), once chosen.
static LEVEL: OnceLock<tracing::Level> = OnceLock::new();

/// Where the logs and crash reports go: `logs` in the data folder.
pub fn logs_dir() -> Option<PathBuf> {
    crate::shipped::data_dir().map(|d| d.join("logs"))
}

/// Reads `--log-level`: error, warn, info, debug or trace.
pub fn parse_level(text: &str) -> Result<tracing::Level, String> {
    text.parse().map_err(|_| format!("{text:?} is not a log level (error, warn, info, debug or trace)"))
}

/// Chooses the log file's level (the first call wins) and installs the crash report.
pub fn init(level: tracing::Level) {
    let _ = LEVEL.set(level);
    install_crash_report();
}

/// A layer writing to the day's log file in [`logs_dir`] at the chosen level, for a
/// subscriber of the headless commands or the window's; `None` (said on stderr) when the
/// folder cannot be made.
pub fn file_layer<S>() -> Option<Box<dyn tracing_subscriber::Layer<S> + Send + Sync + 'static>>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    use tracing_subscriber::Layer;
    let dir = logs_dir()?;
    // Made first: the appender looks for old logs to prune before it makes the folder, and
    // would say on stderr that it found none.
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("no log file in {}: {e}", dir.display());
        return None;
    }
    let appender = tracing_appender::rolling::Builder::new()
        .rotation(tracing_appender::rolling::Rotation::DAILY)
        .filename_prefix("vimp")
        .filename_suffix("log")
        .max_log_files(KEPT_LOGS)
        .build(&dir);
    let appender = match appender {
        Ok(a) => a,
        Err(e) => {
            eprintln!("no log file in {}: {e}", dir.display());
            return None;
        }
    };
    let level = *LEVEL.get().unwrap_or(&tracing::Level::INFO);
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(Mutex::new(appender))
        .with_ansi(false)
        .with_filter(tracing_subscriber::filter::LevelFilter::from_level(level));
    Some(Box::new(layer))
}

/// A panic hook that, after the usual message, writes a crash report (the version and commit,
/// the system, the thread, the panic and its backtrace) to `crash-SECONDS.txt` in
/// [`logs_dir`] and says where it is.
fn install_crash_report() {
    let usual = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        usual(info);
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(no message)".to_owned());
        let location = info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
        let report = crash_report(&message, location.as_deref());
        let Some(dir) = logs_dir() else { return };
        let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let path = dir.join(format!("crash-{stamp}.txt"));
        let written = std::fs::create_dir_all(&dir)
            .and_then(|()| std::fs::File::create(&path))
            .and_then(|mut file| file.write_all(report.as_bytes()));
        match written {
            Ok(()) => eprintln!(
                "vimp crashed. A report is in {}: please send it, with what you were doing, to whoever gave you the game.",
                path.display()
            ),
            Err(e) => eprintln!("vimp crashed, and its report could not be written to {}: {e}", path.display()),
        }
    }));
}

/// What a crash report says: the version and commit, the system, the thread, the panic
/// (`message`, at `location`) and a backtrace of this thread.
fn crash_report(message: &str, location: Option<&str>) -> String {
    let location = location.map_or_else(String::new, |l| format!(" at {l}"));
    let thread = std::thread::current().name().unwrap_or("unnamed").to_owned();
    format!(
        "vimp {VERSION}\nsystem: {} {}\nthread: {thread}\npanic{location}: {message}\n\nbacktrace:\n{}\n",
        std::env::consts::OS,
        std::env::consts::ARCH,
        std::backtrace::Backtrace::force_capture()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_levels_read_by_name_and_the_version_names_its_commit() {
        assert_eq!(parse_level("debug"), Ok(tracing::Level::DEBUG));
        assert!(parse_level("loud").unwrap_err().contains("error, warn, info, debug or trace"));
        assert!(VERSION.starts_with(env!("CARGO_PKG_VERSION")) && VERSION.ends_with(')'), "{VERSION}");
    }

    #[test]
    fn a_crash_report_says_what_crashed_where_and_on_what() {
        let report = crash_report("index out of bounds", Some("app/x.rs:3:9"));
        assert!(report.starts_with(&format!("vimp {VERSION}\nsystem: {} ", std::env::consts::OS)), "{report}");
        assert!(report.contains("panic at app/x.rs:3:9: index out of bounds"), "{report}");
        assert!(report.contains("\nbacktrace:\n"), "{report}");
    }
}
