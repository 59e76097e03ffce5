//! Rebuild when an embedded prompt, template, schema or data file changes: they are
//! compiled into the binary with `include_dir!`, which cargo cannot see.

fn main() {
    for dir in ["prompts", "templates", "schemas", "data"] {
        println!("cargo:rerun-if-changed={dir}");
    }
    // Pack the binary's relative relocations (DT_RELR): the loader then
    // reads a few kilobytes of them instead of ~400 KiB at every start.
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux")
        && std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu")
    {
        println!("cargo:rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
