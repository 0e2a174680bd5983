//! The watermark of incremental exports: `DIR/_watermark.json` holds the `recorded_at`
//! bound of the last run; the next run exports the records recorded from there on.

use std::path::Path;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

const FILE: &str = "_watermark.json";

/// Where the last incremental run stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watermark {
    /// Records recorded before this are exported.
    pub recorded_before: DateTime<Utc>,
}

impl Watermark {
    /// The watermark of `dir`, if a run left one.
    pub fn read(dir: &Path) -> anyhow::Result<Option<Watermark>> {
        let path = dir.join(FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text)
                .map(Some)
                .with_context(|| format!("{} is not a watermark", path.display())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(err).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    /// Stores it in `dir` (written aside, then renamed: never half a file).
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        let temp = dir.join(format!(".{FILE}.tmp"));
        std::fs::write(&temp, serde_json::to_vec_pretty(self)?)?;
        std::fs::rename(&temp, dir.join(FILE))?;
        Ok(())
    }
}
