//! [`Word<T>`]: a word of a closed set as read back from a record, which
//! keeps a word this okstra does not know instead of refusing the record.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A word of the closed set `T`, or one outside it kept as written.
///
/// Records outlive the okstra that wrote them: an older one may have
/// written a word since retired, a newer one a word added after this one.
/// Such a word reads as [`Word::Unknown`], is shown as it is, and is written
/// back unchanged; only code that must act on the word looks at
/// [`Word::known`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Word<T> {
    Known(T),
    Unknown(String),
}

impl<T: Copy> Word<T> {
    /// The word, when it is one of `T`'s.
    pub fn known(&self) -> Option<T> {
        match self {
            Word::Known(word) => Some(*word),
            Word::Unknown(_) => None,
        }
    }
}

impl<T: FromStr> Word<T> {
    /// Reads any word: one of `T`'s, else kept as it is.
    pub fn parse(text: &str) -> Word<T> {
        text.parse()
            .map_or_else(|_| Word::Unknown(text.to_owned()), Word::Known)
    }
}

impl<T> From<T> for Word<T> {
    fn from(word: T) -> Word<T> {
        Word::Known(word)
    }
}

impl<T: PartialEq> PartialEq<T> for Word<T> {
    fn eq(&self, other: &T) -> bool {
        matches!(self, Word::Known(word) if word == other)
    }
}

impl<T: fmt::Display> fmt::Display for Word<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Word::Known(word) => word.fmt(f),
            Word::Unknown(word) => f.write_str(word),
        }
    }
}

impl<T: Serialize> Serialize for Word<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Word::Known(word) => word.serialize(serializer),
            Word::Unknown(word) => serializer.serialize_str(word),
        }
    }
}

impl<'de, T: FromStr> Deserialize<'de> for Word<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Word<T>, D::Error> {
        let text = String::deserialize(deserializer)?;
        Ok(Word::parse(&text))
    }
}
