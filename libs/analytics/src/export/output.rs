//! Where an export goes: a local directory, or object storage ([`Bucket`]). Both hold the
//! same layout (`<table>/date=YYYY-MM-DD/part-<run>.parquet`, `_watermark.json`,
//! `_failures/`); this is the one place that tells them apart for the small files.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::bucket::{self, Bucket};

/// The export's destination.
#[derive(Debug, Clone)]
pub enum Output {
    /// A local directory.
    Dir(PathBuf),
    /// Object storage.
    Bucket(Bucket),
}

impl From<PathBuf> for Output {
    fn from(dir: PathBuf) -> Output {
        Output::Dir(dir)
    }
}

impl From<&Path> for Output {
    fn from(dir: &Path) -> Output {
        Output::Dir(dir.to_owned())
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Output::Dir(dir) => write!(f, "{}", dir.display()),
            Output::Bucket(bucket) => bucket.fmt(f),
        }
    }
}

impl Output {
    /// `--out`: `s3://bucket/prefix` is object storage configured by the `AWS_*` pairs of
    /// `vars`; anything else is a directory.
    pub fn parse(
        text: &str,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> anyhow::Result<Output> {
        if bucket::is_bucket_url(text) {
            return Bucket::open(text, vars).map(Output::Bucket);
        }
        anyhow::ensure!(
            !text.contains("://"),
            "{text:?}: --out is a directory or s3://bucket/prefix"
        );
        Ok(Output::Dir(PathBuf::from(text)))
    }

    /// Makes sure the destination can be written to (creates the directory).
    pub fn prepare(&self) -> anyhow::Result<()> {
        match self {
            Output::Dir(dir) => std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display())),
            Output::Bucket(_) => Ok(()),
        }
    }

    /// The location of `relative` (a `/`-separated path under the root), for people.
    pub fn location(&self, relative: &str) -> String {
        match self {
            Output::Dir(dir) => dir.join(relative).display().to_string(),
            Output::Bucket(bucket) => bucket.location(relative),
        }
    }

    /// The small file `relative`, if it exists.
    pub async fn read(&self, relative: &str) -> anyhow::Result<Option<Vec<u8>>> {
        match self {
            Output::Dir(dir) => {
                let path = dir.join(relative);
                match std::fs::read(&path) {
                    Ok(bytes) => Ok(Some(bytes)),
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(err) => Err(err).with_context(|| format!("cannot read {}", path.display())),
                }
            }
            Output::Bucket(bucket) => bucket.get(relative).await,
        }
    }

    /// Writes the small file `relative` whole (aside and renamed in a directory; one PUT
    /// in a bucket): a reader never sees half of it.
    pub async fn write(&self, relative: &str, bytes: Vec<u8>) -> anyhow::Result<()> {
        match self {
            Output::Dir(dir) => {
                let path = dir.join(relative);
                let parent = path.parent().unwrap_or(dir);
                std::fs::create_dir_all(parent)?;
                let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("file");
                let temp = parent.join(format!(".{name}.tmp"));
                std::fs::write(&temp, bytes)
                    .with_context(|| format!("cannot write {}", temp.display()))?;
                std::fs::rename(&temp, &path)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                Ok(())
            }
            Output::Bucket(bucket) => bucket.put(relative, bytes).await,
        }
    }

    /// The names of the files directly under the directory `relative`, sorted (none when
    /// it does not exist).
    pub async fn list(&self, relative: &str) -> anyhow::Result<Vec<String>> {
        match self {
            Output::Dir(dir) => {
                let path = dir.join(relative);
                let entries = match std::fs::read_dir(&path) {
                    Ok(entries) => entries,
                    Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                    Err(err) => {
                        return Err(err).with_context(|| format!("cannot list {}", path.display()));
                    }
                };
                let mut names = Vec::new();
                for entry in entries {
                    let entry = entry?;
                    if entry.file_type()?.is_file() {
                        names.push(entry.file_name().to_string_lossy().into_owned());
                    }
                }
                names.sort();
                Ok(names)
            }
            Output::Bucket(bucket) => bucket.list(relative).await,
        }
    }

    /// Removes the small file `relative` (no error when it is not there).
    pub async fn remove(&self, relative: &str) -> anyhow::Result<()> {
        match self {
            Output::Dir(dir) => match std::fs::remove_file(dir.join(relative)) {
                Ok(()) => Ok(()),
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(err) => Err(err.into()),
            },
            Output::Bucket(bucket) => bucket.delete(relative).await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_is_a_directory_or_an_s3_url() {
        assert!(matches!(
            Output::parse("/tmp/export", Vec::new()).unwrap(),
            Output::Dir(dir) if dir == Path::new("/tmp/export")
        ));
        assert!(matches!(
            Output::parse("s3://analytics/basra", Vec::new()).unwrap(),
            Output::Bucket(_)
        ));
        let err = Output::parse("ftp://host/x", Vec::new()).unwrap_err();
        assert!(err.to_string().contains("s3://bucket/prefix"), "{err}");
    }
}
