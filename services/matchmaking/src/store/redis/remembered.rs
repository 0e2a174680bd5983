//! What this process remembers of where an id lives: a ticket's format, a room's mode.
//! Neither ever changes for an id, so the memory is only a shortcut past the id's locator
//! key (one round trip less before each step on the id); a wrong guess cannot happen
//! except for an id taken again elsewhere, which the caller checks against the locator
//! when the guess finds nothing. Bounded: past [`Remembered::LIMIT`] ids it starts over.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::domain::Format;

/// Id → format, for the ids this process made or looked up.
#[derive(Debug, Default)]
pub(super) struct Remembered(Mutex<HashMap<String, Format>>);

impl Remembered {
    /// The most ids remembered at once.
    pub(super) const LIMIT: usize = 100_000;

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Format>> {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(super) fn remember(&self, id: &str, format: Format) {
        let mut map = self.map();
        if map.len() >= Self::LIMIT {
            map.clear();
        }
        map.insert(id.to_owned(), format);
    }

    pub(super) fn forget(&self, id: &str) {
        self.map().remove(id);
    }

    pub(super) fn get(&self, id: &str) -> Option<Format> {
        self.map().get(id).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_forgets_and_starts_over_past_the_limit() {
        let remembered = Remembered::default();
        let format = Format::parse("u.2.101").expect("a format");
        remembered.remember("a", format);
        assert_eq!(remembered.get("a"), Some(format));
        remembered.forget("a");
        assert_eq!(remembered.get("a"), None);
        for n in 0..Remembered::LIMIT {
            remembered.remember(&n.to_string(), format);
        }
        assert_eq!(remembered.get("0"), Some(format));
        remembered.remember("one more", format);
        assert_eq!(remembered.get("0"), None);
        assert_eq!(remembered.get("one more"), Some(format));
    }
}
