//! Where the Parquet files are written before they are in place: the output directory
//! itself, or, for object storage, a local directory of the system's temporary directory
//! (`TMPDIR`) named after the output (its endpoint and URL), `basra-export-<output>`.
//!
//! That name is the same for every run into one output, so a run finds what an earlier
//! run into it left there (a run killed mid-upload never got to remove its files) and
//! clears it before it starts. A lock file beside it (`basra-export-<output>.lock`, held
//! for the whole run and removed with the directory) keeps a second run into the same
//! output, on the same machine, from clearing the files of one still under way: it is
//! refused instead.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::output::Output;

/// The staging directory of one run; removed when the run ends (object storage only).
#[derive(Debug)]
pub struct Staging {
    root: PathBuf,
    /// The lock file and its path, held while the run lasts (object storage only).
    lock: Option<(File, PathBuf)>,
}

/// The staging directory of `output` under `temp` (object storage), or the output
/// directory itself.
pub fn dir_for(output: &Output, temp: &Path) -> PathBuf {
    match output {
        Output::Dir(dir) => dir.clone(),
        Output::Bucket(bucket) => {
            let name: String = bucket
                .identity()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            temp.join(format!("basra-export-{name}"))
        }
    }
}

impl Staging {
    /// The staging directory of a run into `output`: for object storage, emptied of what
    /// an earlier run left, and locked until the run ends.
    pub fn for_output(output: &Output) -> anyhow::Result<Staging> {
        let root = dir_for(output, &std::env::temp_dir());
        if let Output::Dir(_) = output {
            return Ok(Staging { root, lock: None });
        }
        let lock_path = root.with_extension("lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .with_context(|| format!("cannot create {}", lock_path.display()))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => anyhow::bail!(
                "another export into {output} is under way on this machine ({} is locked)",
                lock_path.display()
            ),
            Err(std::fs::TryLockError::Error(err)) => {
                return Err(err).with_context(|| format!("cannot lock {}", lock_path.display()));
            }
        }
        match std::fs::remove_dir_all(&root) {
            Ok(()) => {}
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(err) => {
                return Err(err).with_context(|| {
                    format!("cannot clear {}, left by an earlier run", root.display())
                });
            }
        }
        std::fs::create_dir_all(&root)
            .with_context(|| format!("cannot create {}", root.display()))?;
        Ok(Staging {
            root,
            lock: Some((lock, lock_path)),
        })
    }

    /// The directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // Removed, and the lock file too, before the lock is released: the next run never
        // sees a half-removed directory of a run that ended.
        if let Some((lock, path)) = self.lock.take() {
            let _ = std::fs::remove_dir_all(&self.root);
            let _ = std::fs::remove_file(path);
            drop(lock);
        }
    }
}
