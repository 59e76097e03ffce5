//! Rebuild when an embedded prompt, template, schema or data file changes: they are
//! compiled into the binary with `include_dir!`, which cargo cannot see.

fn main() {
    for dir in ["prompts", "templates", "schemas", "data"] {
        println!("cargo:rerun-if-changed={dir}");
    }
}
