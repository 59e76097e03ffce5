//! Which result sections are claims for the other workers to cross-check,
//! and which describe: each profile's numbered sections, as its template
//! (`prompts/profiles/results/<profile stem>.md.j2`) lists them. Only items of
//! claim sections go to convergence; a description (purpose, components,
//! flow, build steps, recommendations) is the worker's account, not a
//! finding to vote on.
//!
//! A result's `## ` heading is matched to a section by its title (models
//! renumber, rarely retitle), then by its number. An item under a heading
//! that matches no section is treated as a claim: nothing is left out of
//! review because a model named a section its own way.

use crate::catalog::TaskType;
use crate::profile::Profile;

/// One numbered section of a task type's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    pub number: u32,
    pub title: &'static str,
    /// Cross-checked by the other workers in convergence.
    pub claim: bool,
}

const fn claim(number: u32, title: &'static str) -> Section {
    Section {
        number,
        title,
        claim: true,
    }
}

const fn description(number: u32, title: &'static str) -> Section {
    Section {
        number,
        title,
        claim: false,
    }
}

const PROJECT_ANALYSIS: &[Section] = &[
    description(1, "Purpose and shape"),
    description(2, "Components"),
    description(3, "Data and control flow"),
    description(4, "Build, test and run"),
    claim(5, "Findings"),
    description(6, "Recommendations"),
    description(7, "Answers to the brief"),
];

/// The defect hunt of `project-analysis`: a paragraph of scope, the
/// defects, and answers the defects do not give.
const DEFECT_HUNT: &[Section] = &[
    description(1, "Scope"),
    claim(2, "Defects"),
    description(3, "Other answers to the brief"),
];

const ERROR_ANALYSIS: &[Section] = &[
    description(1, "The symptom"),
    description(2, "Observation and reproduction"),
    claim(3, "Hypotheses"),
    claim(4, "Root cause"),
    description(5, "Fix options"),
    description(6, "Clarification questions"),
];

const FEATURE_ANALYSIS: &[Section] = &[
    description(1, "The feature in question"),
    description(2, "Where it lives"),
    description(3, "How it works"),
    claim(4, "Edge cases and failure modes"),
    claim(5, "Tests"),
    claim(6, "Findings and recommendations"),
];

const CHANGE_IMPACT_ANALYSIS: &[Section] = &[
    description(1, "The change as understood"),
    claim(2, "Direct impact"),
    claim(3, "Indirect impact"),
    claim(4, "Compatibility"),
    description(5, "Test impact"),
    claim(6, "Risks"),
];

const IMPLEMENTATION_PLANNING: &[Section] = &[
    description(1, "Goal and scope"),
    description(2, "Current state"),
    description(3, "Design decisions"),
    description(4, "Step plan"),
    description(5, "Test plan"),
    claim(6, "Risks and rollback"),
    claim(7, "Plan verification"),
];

const REQUIREMENTS_DISCOVERY: &[Section] = &[
    description(1, "The request as understood"),
    claim(2, "Current behaviour"),
    description(3, "Functional requirements"),
    description(4, "Non-functional requirements and constraints"),
    claim(5, "Assumptions and risks"),
    description(6, "Clarification questions"),
];

/// The verifiers' sections (the Executor's are not reviewed: it is no
/// reviewer).
const IMPLEMENTATION: &[Section] = &[
    description(1, "Scope checked"),
    claim(2, "Plan conformance"),
    claim(3, "Defects"),
    description(4, "Checks run"),
    description(5, "Assessment"),
];

/// The sections a reviewer of `profile` writes, in order.
pub fn sections(profile: Profile) -> &'static [Section] {
    if profile.stem() == "defect-hunt" {
        return DEFECT_HUNT;
    }
    match profile.task_type {
        TaskType::ProjectAnalysis => PROJECT_ANALYSIS,
        TaskType::ErrorAnalysis => ERROR_ANALYSIS,
        TaskType::FeatureAnalysis => FEATURE_ANALYSIS,
        TaskType::ChangeImpactAnalysis => CHANGE_IMPACT_ANALYSIS,
        TaskType::ImplementationPlanning => IMPLEMENTATION_PLANNING,
        TaskType::RequirementsDiscovery => REQUIREMENTS_DISCOVERY,
        TaskType::Implementation => IMPLEMENTATION,
    }
}

/// `## 5. **Findings**` → (`Some(5)`, `findings`): the heading's number and
/// its title, lowercased, without numbering or emphasis.
fn heading_parts(heading: &str) -> (Option<u32>, String) {
    let text = heading.trim().trim_start_matches(['#', '§', ' ']);
    let digits: String = text.chars().take_while(char::is_ascii_digit).collect();
    let rest = text[digits.len()..].trim_start_matches(['.', ')', ':', ' ', '\t']);
    let title: String = rest
        .chars()
        .filter(|c| !matches!(c, '*' | '_' | '`'))
        .collect::<String>()
        .to_lowercase();
    (digits.parse().ok(), title.trim().to_owned())
}

/// The section `heading` is, if it matches one of `profile`'s.
pub fn section_of(profile: Profile, heading: &str) -> Option<&'static Section> {
    let (number, title) = heading_parts(heading);
    let sections = sections(profile);
    if !title.is_empty() {
        // The longest matching title wins: "findings and recommendations"
        // before "findings".
        let by_title = sections
            .iter()
            .filter(|s| {
                let known = s.title.to_lowercase();
                title.starts_with(&known) || known.starts_with(&title)
            })
            .max_by_key(|s| s.title.len());
        if by_title.is_some() {
            return by_title;
        }
    }
    number.and_then(|n| sections.iter().find(|s| s.number == n))
}

/// Whether an item under `heading` is a claim for convergence.
pub fn is_claim(profile: Profile, heading: &str) -> bool {
    section_of(profile, heading).is_none_or(|s| s.claim)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_match_by_title_then_number() {
        let pa = Profile::of(TaskType::ProjectAnalysis);
        assert!(is_claim(pa, "5. Findings"));
        assert!(
            is_claim(pa, "1. Findings"),
            "a renumbered title still matches"
        );
        assert!(is_claim(pa, "## **Findings**"));
        assert!(!is_claim(pa, "2. Components"));
        assert!(!is_claim(pa, "Data and control flow"));
        assert!(
            !is_claim(pa, "3) Data flow"),
            "the number decides a retitled one"
        );
        assert!(
            is_claim(pa, "Risks I noticed"),
            "an unknown section is reviewed"
        );
        assert!(is_claim(pa, ""), "items before any heading are reviewed");
        let fa = Profile::of(TaskType::FeatureAnalysis);
        assert_eq!(
            section_of(fa, "6. Findings and recommendations").map(|s| s.number),
            Some(6)
        );
        let implementation = Profile::of(TaskType::Implementation);
        assert!(is_claim(implementation, "3. Defects"));
        assert!(!is_claim(implementation, "4. Checks run"));
        let hunt = Profile {
            task_type: TaskType::ProjectAnalysis,
            focus: Some(crate::catalog::Focus::Defects),
        };
        assert!(is_claim(hunt, "2. Defects"));
        assert!(!is_claim(hunt, "1. Scope"));
        assert!(!is_claim(hunt, "3. Other answers to the brief"));
    }

    /// The profile each worker reads marks the same sections as claims as
    /// this table: `N. **Title** *(claims …)*`.
    #[test]
    fn every_profile_marks_the_claim_sections_of_this_table() {
        let variants = crate::catalog::Focus::ALL.iter().filter_map(|&focus| {
            TaskType::ALL
                .iter()
                .find(|&&t| Profile::allows(t, focus))
                .map(|&task_type| Profile {
                    task_type,
                    focus: Some(focus),
                })
        });
        for profile in TaskType::ALL
            .iter()
            .map(|&t| Profile::of(t))
            .chain(variants)
        {
            let task_type = profile.task_type;
            let name = format!("prompts/profiles/results/{}.md.j2", profile.stem());
            let source = crate::template::source(&name).unwrap();
            let mut listed = Vec::new();
            let mut in_verifier = task_type != TaskType::Implementation;
            for line in source.lines() {
                if line.contains("**Each verifier**") {
                    in_verifier = true;
                }
                let Some((number, rest)) = line.split_once(". **") else {
                    continue;
                };
                let (Ok(number), Some((title, after))) =
                    (number.parse::<u32>(), rest.split_once("**"))
                else {
                    continue;
                };
                if in_verifier {
                    listed.push((number, title.to_owned(), after.starts_with(" *(claims")));
                }
            }
            let expected: Vec<_> = sections(profile)
                .iter()
                .map(|s| (s.number, s.title.to_owned(), s.claim))
                .collect();
            assert_eq!(listed, expected, "{name}");
        }
    }
}
