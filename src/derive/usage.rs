//! The run's usage summary (the report's `usageSummary`): the usage okstra
//! recorded for each attempt and the lead, summed by the one function that
//! makes every summary (`crate::usage`). The report's block is written from
//! this and checked against it; `okstra usage --json` prints the same.

use crate::run::Records;
use crate::usage::Summary;

/// The usage summary the run's records give.
pub fn summary(records: &Records) -> Summary {
    crate::usage::summary_of(&records.run, &records.state_value)
}
