//! The one place a minijinja `Environment` is built.
//!
//! Templates (`templates/`) and the prompt library (`prompts/`) are compiled
//! into the binary. Undefined variables are errors (a misspelt name fails the
//! render instead of rendering empty), trailing newlines are kept, and
//! auto-escaping follows the file extension: `.html` templates (the final
//! report's page) escape for HTML, everything else (Markdown and text) is
//! printed as is. A render error carries the template's name, line and source
//! excerpt.

use std::path::Path;

use include_dir::{Dir, include_dir};
use minijinja::{AutoEscape, Environment, UndefinedBehavior};

static PROMPTS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/prompts");
static TEMPLATES: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/templates");

/// A failed render, with the template engine's own location and excerpt.
#[derive(Debug, thiserror::Error)]
#[error("cannot render template `{name}`:\n{detail}")]
pub struct Error {
    pub name: String,
    pub detail: String,
}

/// Find an embedded template by its repository path
/// (`templates/handoff.md.j2`, `prompts/lead/contract.md.j2`).
pub fn source(name: &str) -> Option<&'static str> {
    let (root, rest) = name.split_once('/')?;
    let dir = match root {
        "prompts" => &PROMPTS,
        "templates" => &TEMPLATES,
        _ => return None,
    };
    dir.get_file(rest).and_then(|file| file.contents_utf8())
}

/// Every embedded template name (the tests parse each one).
#[cfg(test)]
pub fn names() -> Vec<String> {
    fn walk(dir: &Dir<'_>, root: &str, out: &mut Vec<String>) {
        for file in dir.files() {
            out.push(format!("{root}/{}", file.path().display()));
        }
        for sub in dir.dirs() {
            walk(sub, root, out);
        }
    }
    let mut out = Vec::new();
    walk(&PROMPTS, "prompts", &mut out);
    walk(&TEMPLATES, "templates", &mut out);
    out.sort();
    out
}

/// The shared environment: strict, embedded, HTML auto-escape for `.html`
/// templates only.
pub fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_syntax(
        minijinja::syntax::SyntaxConfig::builder()
            .keep_trailing_newline(true)
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .expect("the default delimiters are a valid syntax"),
    );
    env.set_auto_escape_callback(auto_escape);
    env.set_loader(|name| Ok(source(name).map(str::to_owned)));
    env.add_filter("beneath", beneath);
    env
}

/// `{{ path | beneath(root) }}`: `path` relative to `root` when it lies
/// inside it (`results/claude-worker.md`), else `path` as it is. A prompt
/// names its root once and every other path relative to it.
fn beneath(path: &str, root: &str) -> String {
    Path::new(path)
        .strip_prefix(root)
        .ok()
        .filter(|relative| !relative.as_os_str().is_empty())
        .map_or_else(
            || path.to_owned(),
            |relative| relative.display().to_string(),
        )
}

/// `name.html.j2` (or `.html`) escapes for HTML; `.md.j2` and everything else
/// is printed as is, so Markdown never picks up `&amp;`.
pub fn auto_escape(name: &str) -> AutoEscape {
    let stem = Path::new(name.strip_suffix(".j2").unwrap_or(name));
    if stem.extension().is_some_and(|ext| ext == "html") {
        AutoEscape::Html
    } else {
        AutoEscape::None
    }
}

/// Render template `name` with `context`.
pub fn render<C: Into<minijinja::Value>>(
    env: &Environment<'_>,
    name: &str,
    context: C,
) -> Result<String, Error> {
    let failed = |err: &minijinja::Error| Error {
        name: name.to_owned(),
        detail: format!("{err:#}"),
    };
    let template = env.get_template(name).map_err(|err| failed(&err))?;
    template.render(context.into()).map_err(|err| failed(&err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undefined_variables_fail_the_render() {
        let mut env = environment();
        env.add_template("t", "hello {{ nobody }}").unwrap();
        let err = render(&env, "t", minijinja::context! {}).unwrap_err();
        assert!(err.to_string().contains("undefined"), "{err}");
    }

    #[test]
    fn only_html_templates_are_escaped() {
        let mut env = environment();
        for name in ["t.html.j2", "t.html", "t.md.j2", "t.j2", "html.md.j2"] {
            env.add_template_owned(name, "{{ text }}").unwrap();
        }
        let render = |name| render(&env, name, minijinja::context! { text => "a & <b>" }).unwrap();
        assert_eq!(render("t.html.j2"), "a &amp; &lt;b&gt;");
        assert_eq!(render("t.html"), "a &amp; &lt;b&gt;");
        assert_eq!(render("t.md.j2"), "a & <b>");
        assert_eq!(render("t.j2"), "a & <b>");
        assert_eq!(render("html.md.j2"), "a & <b>");
    }

    #[test]
    fn paths_beneath_a_root_are_shown_relative_to_it() {
        for (path, root, shown) in [
            ("/r/run/results/a.md", "/r/run", "results/a.md"),
            ("/r/run/results/a.md", "/r/run/", "results/a.md"),
            ("/r/runs/a.md", "/r/run", "/r/runs/a.md"),
            ("/r/run", "/r/run", "/r/run"),
            ("/elsewhere/a.md", "/r/run", "/elsewhere/a.md"),
        ] {
            assert_eq!(beneath(path, root), shown, "{path} in {root}");
        }
    }

    #[test]
    fn every_embedded_template_parses() {
        let env = environment();
        for name in names() {
            if Path::new(&name).extension().is_some_and(|ext| ext == "j2") {
                env.get_template(&name)
                    .unwrap_or_else(|err| panic!("{name}: {err:#}"));
            }
        }
    }
}
