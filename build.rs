//! Rebuild when an embedded prompt, template or schema changes: they are
//! compiled into the binary with `include_dir!`, which cargo cannot see.

fn main() {
    for dir in ["prompts", "templates", "schemas"] {
        println!("cargo:rerun-if-changed={dir}");
    }
}
