//! How to fix what stops a provider, in one place: the words the doctor,
//! the preflight of `okstra run` / `okstra ask` and a run's closing summary
//! print after a problem, so the same problem always gets the same advice.
//!
//! Each function returns one line (no trailing period, commands in
//! backticks); the caller prints it after its own description of the
//! problem. Nothing here looks at the machine: what is wrong was decided
//! elsewhere (`doctor`, `preflight`, `dispatch::classify`).

use std::path::Path;

use crate::catalog::Provider;
use crate::cli_facts::Program;
use crate::vocab::Ending;

use crate::shell::word as shell_word;

/// How `provider`'s CLI is installed (its descriptor's words).
pub fn install(provider: Provider) -> &'static str {
    provider.descriptor().install
}

/// How `provider`'s CLI is given credentials (names only, never values).
pub fn log_in(provider: Provider) -> &'static str {
    provider.descriptor().log_in
}

/// What to do about a CLI that is not the program okstra drives.
pub fn look_alike(provider: Provider, program: Program) -> String {
    // A refused look-alike's fix is the program's own, whichever CLI's
    // name it took.
    if let Some(refused) = Provider::ALL
        .iter()
        .find_map(|cli| cli.descriptor().identity.refuses(Some(program)))
    {
        return refused.fix.to_owned();
    }
    if program == Program::Unrecognised {
        return format!(
            "check that `{} --version` works on its own, or {}",
            provider.binary(),
            install(provider)
        );
    }
    "nothing: okstra drives this program".to_owned()
}

/// What to do after an attempt of `provider` ended `ending`; `None` for an
/// ending that needs nothing (completed). `run_dir` names the run to resume.
pub fn for_ending(provider: Provider, ending: Ending, run_dir: Option<&Path>) -> Option<String> {
    let resume = run_dir.map_or_else(String::new, |dir| {
        format!(
            ", then resume with `okstra run {}`",
            shell_word(&dir.to_string_lossy())
        )
    });
    let binary = provider.binary();
    Some(match ending {
        Ending::Completed => return None,
        Ending::Auth => format!("{}{resume}", log_in(provider)),
        Ending::Network => format!(
            "check the network or proxy (`HTTPS_PROXY`) this machine reaches the {provider} API through{resume}"
        ),
        Ending::RateLimit => format!(
            "wait a little for {provider}'s rate limit{resume}; fewer calls at once with `--provider-slots {provider}=1`, a longer wait before the one retry with `--retry-cooldown`"
        ),
        Ending::Quota => format!(
            "the {provider} account's quota is spent: wait until it resets (the attempt's detail says when) or log in with another account{resume}"
        ),
        Ending::CliMissing => format!("{}{resume}", install(provider)),
        Ending::UsageError => format!(
            "`{binary}` refused the command line okstra gave it: `okstra doctor --probe --provider {provider}` shows which program it is and how it answers"
        ),
        Ending::IdleTimeout => format!(
            "it printed nothing for the idle timeout; raise `--idle-timeout` (seconds) or check `okstra doctor --probe --provider {provider}`{resume}"
        ),
        Ending::EmptyOutput | Ending::Crash => format!(
            "read the attempt's log (`okstra status --log-tail 40 <run-dir>`); `okstra doctor --probe --provider {provider}` tries a tiny run{resume}"
        ),
        Ending::Signalled | Ending::Cancelled => format!("nothing is lost{}", {
            if resume.is_empty() {
                "; run it again".to_owned()
            } else {
                resume.replacen(", then", ":", 1)
            }
        }),
        Ending::Budget => format!("raise `--max-cost` / `--max-tokens`{resume}"),
    })
}

/// How to leave `provider` out of a roster of `workers` (worker ids in
/// roster order, `report-writer` included): the `--workers` value without it.
pub fn drop_from_roster(provider: Provider, workers: &[String]) -> Option<String> {
    let kept: Vec<&str> = workers
        .iter()
        .map(String::as_str)
        .filter(|w| *w != provider.as_str())
        .collect();
    let analysers = kept
        .iter()
        .filter(|w| **w != crate::catalog::REPORT_WRITER)
        .count();
    (kept.len() < workers.len() && analysers > 0).then(|| format!("--workers {}", kept.join(",")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_failing_ending_has_advice_and_completed_none() {
        for ending in Ending::ALL {
            let advice = for_ending(Provider::Codex, *ending, Some(Path::new("/p/r un")));
            assert_eq!(advice.is_none(), *ending == Ending::Completed, "{ending}");
            if let Some(advice) = advice
                && ending.is_retryable()
            {
                assert!(advice.contains("'/p/r un'"), "{ending}: {advice}");
            }
        }
        assert_eq!(
            for_ending(Provider::Claude, Ending::Auth, None).unwrap(),
            "run `claude` once and `/login`, or set `ANTHROPIC_API_KEY` (or `CLAUDE_CODE_OAUTH_TOKEN`)"
        );
        assert_eq!(
            for_ending(Provider::Kimi, Ending::Cancelled, Some(Path::new("/r"))).unwrap(),
            "nothing is lost: resume with `okstra run /r`"
        );
    }

    #[test]
    fn a_provider_is_dropped_from_the_roster_only_when_one_analyser_is_left() {
        let roster = |w: &[&str]| w.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            drop_from_roster(
                Provider::Claude,
                &roster(&["claude", "codex", "report-writer"])
            )
            .as_deref(),
            Some("--workers codex,report-writer")
        );
        assert_eq!(
            drop_from_roster(Provider::Claude, &roster(&["claude", "report-writer"])),
            None
        );
        assert_eq!(
            drop_from_roster(Provider::Grok, &roster(&["claude", "codex"])),
            None
        );
    }
}
