//! A run folder and everything okstra keeps in it: the run manifest, the
//! roster, the team state's attempt records, the file layout.

pub mod layout;
pub mod manifest;
pub mod paths;
pub mod roster;
pub mod team_state;
