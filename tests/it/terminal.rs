//! Bare `okstra` on a terminal, as a person meets it: the real binary on a
//! pseudo-terminal (`openpty`), each answer typed only once its question is
//! on the screen. The questions show their choices and defaults, a bad
//! answer is refused and asked again, and the answers given before it are
//! kept all the way to the rendered run.

use std::fs::File;
use std::io::{Read, Write};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use nix::pty::{Winsize, openpty};

use crate::run::team_project;
use crate::support::{Project, limit, okstra_path};

/// A running okstra whose stdin, stdout and stderr are one terminal.
struct Session {
    child: Child,
    keyboard: File,
    /// Everything the terminal showed so far (`\r\n` made `\n`).
    screen: Arc<Mutex<String>>,
    /// Where the next [`Session::expect`] starts looking.
    seen: usize,
}

impl Session {
    fn start(world: &Project, args: &[&str]) -> Session {
        let size = Winsize {
            ws_row: 40,
            ws_col: 100,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = openpty(&size, None).unwrap();
        let mut cmd = world.command(okstra_path());
        cmd.args(args)
            .stdin(Stdio::from(pty.slave.try_clone().unwrap()))
            .stdout(Stdio::from(pty.slave.try_clone().unwrap()))
            .stderr(Stdio::from(pty.slave));
        let child = cmd.spawn().unwrap();
        // Our copies of the terminal's far end go with `cmd`: once okstra
        // ends, reading the near end ends too.
        drop(cmd);
        let keyboard = File::from(pty.master);
        let mut display = keyboard.try_clone().unwrap();
        let screen = Arc::new(Mutex::new(String::new()));
        let shown = Arc::clone(&screen);
        std::thread::spawn(move || {
            let mut buffer = [0_u8; 4096];
            // EIO once the far end is closed: the program has ended.
            while let Ok(read @ 1..) = display.read(&mut buffer) {
                let text = String::from_utf8_lossy(&buffer[..read]).replace("\r\n", "\n");
                shown.lock().unwrap().push_str(&text);
            }
        });
        Session {
            child,
            keyboard,
            screen,
            seen: 0,
        }
    }

    fn screen(&self) -> String {
        self.screen.lock().unwrap().clone()
    }

    /// Wait until `text` shows after what was already expected.
    fn expect(&mut self, text: &str) {
        let deadline = Instant::now() + limit();
        loop {
            let screen = self.screen();
            if let Some(at) = screen[self.seen..].find(text) {
                self.seen += at + text.len();
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{text:?} never showed; the screen after what was expected:\n{}",
                &screen[self.seen..]
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Type `line` and Enter.
    fn answer(&mut self, line: &str) {
        self.keyboard
            .write_all(format!("{line}\n").as_bytes())
            .unwrap();
        self.keyboard.flush().unwrap();
        // The terminal echoes what was typed; the next question comes after.
        self.expect(&format!("{line}\n"));
    }

    /// The exit code, once the program ends.
    fn finish(mut self) -> (i32, String) {
        let deadline = Instant::now() + limit();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                // Let the reader take the last output.
                std::thread::sleep(Duration::from_millis(100));
                return (status.code().unwrap_or(-1), self.screen());
            }
            if Instant::now() > deadline {
                self.child.kill().unwrap();
                panic!("okstra did not end:\n{}", self.screen());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

const QUESTION: &str = "Why are reservations oversold?";
const SLUG: &str = "(lowercase letters, digits, `.`, `_`, `-`)";

#[test]
fn bare_okstra_asks_again_on_a_bad_task_id_and_keeps_the_earlier_answers() {
    let world = team_project();
    let mut session = Session::start(&world, &["--render-only"]);
    session.expect("task-brief (a file with the question, or the question itself): ");
    session.answer(QUESTION);
    // Defaults are shown in brackets: one typed over, one taken with Enter.
    session.expect(&format!("project-id {SLUG} [project]: "));
    session.answer("shop");
    session.expect(&format!("task-group {SLUG} [ask]: "));
    session.answer("");
    let task_id = format!("task-id {SLUG} [why-are-reservations-oversold]: ");
    session.expect(&task_id);
    session.answer("first look");
    // Refused, saying why, and the same question again.
    session.expect("invalid value `first look` for `--task-id`: expected a safe slug");
    session.expect("; try again\n");
    session.expect(&task_id);
    session.answer("first-look");
    // A closed set: its choices numbered, the default marked.
    session.expect("task-type, one of:\n");
    session.expect("  1) requirements-discovery\n");
    session.expect("  4) project-analysis (default)\n");
    session.expect("task-type [project-analysis]: ");
    session.answer("");
    let (code, screen) = session.finish();
    assert_eq!(code, 0, "{screen}");
    // Every answer given before the refusal reached the run.
    let run = world
        .okstra_dir()
        .join("tasks/shop/ask/first-look/project-analysis-001");
    assert!(run.join("handoff.md").is_file(), "{screen}");
    assert!(
        screen.contains(&run.join("handoff.md").display().to_string())
            || screen.contains("/tasks/shop/ask/first-look/project-analysis-001/handoff.md"),
        "{screen}"
    );
    assert_eq!(
        std::fs::read_to_string(run.join("inputs/task-brief.md")).unwrap(),
        format!("{QUESTION}\n")
    );
}
