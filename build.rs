//! Names the commit the binary is built from, for `vimp --version` and crash reports
//! (`VIMP_COMMIT`: `commit 0123456789ab`, or what the environment's `VIMP_COMMIT` says, for a
//! build from a source archive).

fn main() {
    println!("cargo:rerun-if-env-changed=VIMP_COMMIT");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/refs/heads");
    println!("cargo:rerun-if-changed=.git/packed-refs");
    let commit = std::env::var("VIMP_COMMIT").ok().filter(|c| !c.is_empty()).or_else(|| {
        let out = std::process::Command::new("git").args(["rev-parse", "--short=12", "HEAD"]).output().ok()?;
        let hash = String::from_utf8(out.stdout).ok()?.trim().to_owned();
        (out.status.success() && !hash.is_empty()).then(|| format!("commit {hash}"))
    });
    println!("cargo:rustc-env=VIMP_COMMIT={}", commit.unwrap_or_else(|| "no commit known".to_owned()));
}
