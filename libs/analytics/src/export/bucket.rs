//! An export into object storage: `s3://bucket/prefix` through the `object_store` crate.
//!
//! The Parquet files are written as for a directory, into a local staging directory, and
//! each file is uploaded under the same relative key as soon as its day is closed (then
//! removed locally), so the staging directory holds a few days' files at most. Small
//! objects (the watermark, the failures list) are put whole. A PUT is atomic in S3: a
//! reader sees an object whole or not at all.
//!
//! Credentials and settings come from the usual `AWS_*` variables (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` / `AWS_DEFAULT_REGION`,
//! `AWS_ENDPOINT_URL` for an S3-compatible server, `AWS_ALLOW_HTTP`, …: every key
//! `object_store`'s `AmazonS3Builder` knows; without keys, the instance or pod's role).
//! Plain HTTP is refused unless `AWS_ALLOW_HTTP=true`, or the endpoint is a loopback
//! address (a server on this machine, as in the tests).

use std::path::Path as FsPath;
use std::sync::Arc;

use anyhow::Context as _;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::buffered::BufWriter;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt as _, PutPayload};
use tokio::io::AsyncWriteExt as _;
use tokio_stream::StreamExt as _;

/// Bytes buffered before an upload becomes a multipart upload, and the size of its parts.
pub const PART_BYTES: usize = 8 * 1024 * 1024;
/// Parts of one multipart upload in flight.
const PARTS_IN_FLIGHT: usize = 2;

/// Where in object storage an export goes.
#[derive(Debug, Clone)]
pub struct Bucket {
    store: Arc<dyn ObjectStore>,
    prefix: Path,
    url: String,
    /// `AWS_ENDPOINT_URL`, when set: with the URL, what tells two outputs apart.
    endpoint: Option<String>,
}

impl std::fmt::Display for Bucket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.url)
    }
}

/// Whether `url` names object storage (`s3://…`, `s3a://…`) rather than a directory.
pub fn is_bucket_url(url: &str) -> bool {
    url.split_once("://")
        .is_some_and(|(scheme, _)| matches!(scheme, "s3" | "s3a"))
}

/// Whether an endpoint URL is on this machine (`localhost`, `127.0.0.0/8`, `::1`): plain
/// HTTP is allowed there without `AWS_ALLOW_HTTP`.
pub fn is_loopback(endpoint: &str) -> bool {
    let Ok(url) = url::Url::parse(endpoint) else {
        return false;
    };
    match url.host() {
        Some(url::Host::Domain(name)) => name.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        None => false,
    }
}

impl Bucket {
    /// `s3://bucket/prefix`, configured by the `AWS_*` pairs of `vars` (give it
    /// `std::env::vars()`).
    pub fn open(
        url: &str,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> anyhow::Result<Bucket> {
        let parsed = url::Url::parse(url).with_context(|| format!("{url:?} is not a URL"))?;
        anyhow::ensure!(
            is_bucket_url(url),
            "{url:?}: object storage is s3://bucket/prefix (or s3a://)"
        );
        let mut builder = AmazonS3Builder::new().with_url(url);
        for (key, value) in vars {
            if !key.starts_with("AWS_") {
                continue;
            }
            if let Ok(config) = key.to_ascii_lowercase().parse::<AmazonS3ConfigKey>() {
                builder = builder.with_config(config, value);
            }
        }
        let endpoint = builder.get_config_value(&AmazonS3ConfigKey::Endpoint);
        if endpoint.as_deref().is_some_and(is_loopback) {
            builder = builder.with_allow_http(true);
        }
        let store = builder
            .build()
            .with_context(|| format!("cannot use {url} (the AWS_* settings)"))?;
        let mut bucket = Bucket::new(Arc::new(store), parsed.path(), url);
        bucket.endpoint = endpoint;
        Ok(bucket)
    }

    /// A bucket over any object store (tests wrap one); `prefix` is the key prefix.
    pub fn new(store: Arc<dyn ObjectStore>, prefix: &str, url: &str) -> Bucket {
        Bucket {
            store,
            prefix: Path::from(prefix.trim_matches('/')),
            url: url.trim_end_matches('/').to_owned(),
            endpoint: None,
        }
    }

    /// The same bucket through another store (tests wrap one to inject failures).
    pub fn with_store(&self, store: Arc<dyn ObjectStore>) -> Bucket {
        Bucket {
            store,
            ..self.clone()
        }
    }

    /// What names this output among others: the endpoint, if set, and the URL.
    pub fn identity(&self) -> String {
        match &self.endpoint {
            Some(endpoint) => format!("{endpoint} {}", self.url),
            None => self.url.clone(),
        }
    }

    /// The store and prefix (to read an export back).
    pub fn store(&self) -> (&Arc<dyn ObjectStore>, &Path) {
        (&self.store, &self.prefix)
    }

    /// The key of `relative` (a `/`-separated path under the export's root).
    pub fn key(&self, relative: &str) -> Path {
        relative
            .split('/')
            .fold(self.prefix.clone(), |key, part| key.join(part))
    }

    /// The URL of `relative`, for people.
    pub fn location(&self, relative: &str) -> String {
        format!("{}/{relative}", self.url)
    }

    /// The object `relative`, if it exists.
    pub async fn get(&self, relative: &str) -> anyhow::Result<Option<Vec<u8>>> {
        match self.store.get(&self.key(relative)).await {
            Ok(object) => Ok(Some(object.bytes().await?.to_vec())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(err) => {
                Err(err).with_context(|| format!("cannot read {}", self.location(relative)))
            }
        }
    }

    /// Puts `bytes` as the object `relative`, whole.
    pub async fn put(&self, relative: &str, bytes: Vec<u8>) -> anyhow::Result<()> {
        self.store
            .put(&self.key(relative), PutPayload::from(bytes))
            .await
            .with_context(|| format!("cannot write {}", self.location(relative)))?;
        Ok(())
    }

    /// Removes the object `relative` (no error when it is not there).
    pub async fn delete(&self, relative: &str) -> anyhow::Result<()> {
        match self.store.delete(&self.key(relative)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(err) => {
                Err(err).with_context(|| format!("cannot remove {}", self.location(relative)))
            }
        }
    }

    /// The names of the objects directly under the directory `relative` (not deeper).
    pub async fn list(&self, relative: &str) -> anyhow::Result<Vec<String>> {
        let listed = self
            .store
            .list_with_delimiter(Some(&self.key(relative)))
            .await
            .with_context(|| format!("cannot list {}", self.location(relative)))?;
        let mut names: Vec<String> = listed
            .objects
            .iter()
            .filter_map(|meta| meta.location.filename().map(str::to_owned))
            .collect();
        names.sort();
        Ok(names)
    }

    /// Downloads the object `relative` into the local `file`.
    pub async fn download(&self, relative: &str, file: &FsPath) -> anyhow::Result<()> {
        let failed = || format!("cannot download {}", self.location(relative));
        let mut chunks = self
            .store
            .get(&self.key(relative))
            .await
            .with_context(failed)?
            .into_stream();
        let mut target = tokio::fs::File::create(file)
            .await
            .with_context(|| format!("cannot create {}", file.display()))?;
        while let Some(chunk) = chunks.next().await {
            target.write_all(&chunk.with_context(failed)?).await?;
        }
        target.flush().await?;
        Ok(())
    }

    /// Uploads the local `file` as the object `relative`: one PUT up to [`PART_BYTES`],
    /// a multipart upload beyond (completed only when every part is in, so the object
    /// appears whole or not at all).
    pub async fn upload(&self, file: &FsPath, relative: &str) -> anyhow::Result<()> {
        let mut source = tokio::fs::File::open(file)
            .await
            .with_context(|| format!("cannot open {}", file.display()))?;
        let mut target =
            BufWriter::with_capacity(self.store.clone(), self.key(relative), PART_BYTES)
                .with_max_concurrency(PARTS_IN_FLIGHT);
        let copied = tokio::io::copy(&mut source, &mut target).await;
        if let Err(err) = copied {
            let _ = target.abort().await;
            return Err(err).with_context(|| format!("cannot upload {}", self.location(relative)));
        }
        target
            .shutdown()
            .await
            .with_context(|| format!("cannot upload {}", self.location(relative)))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_s3_urls_are_buckets() {
        assert!(is_bucket_url("s3://bucket/basra"));
        assert!(is_bucket_url("s3a://bucket"));
        assert!(!is_bucket_url("/tmp/export"));
        assert!(!is_bucket_url("export"));
        assert!(!is_bucket_url("file:///tmp/export"));
    }

    #[test]
    fn plain_http_is_for_loopback_endpoints_only() {
        for endpoint in [
            "http://127.0.0.1:9000",
            "http://127.1.2.3",
            "http://localhost:5000/",
            "http://[::1]:9000",
        ] {
            assert!(is_loopback(endpoint), "{endpoint}");
        }
        for endpoint in [
            "http://10.0.0.5:9000",
            "http://minio.analytics.svc:9000",
            "https://s3.eu-west-1.amazonaws.com",
            "not a url",
        ] {
            assert!(!is_loopback(endpoint), "{endpoint}");
        }
    }

    #[test]
    fn keys_are_under_the_prefix() {
        let bucket = Bucket::open(
            "s3://analytics/basra/export/",
            [("AWS_REGION".to_owned(), "eu-west-1".to_owned())],
        )
        .unwrap();
        assert_eq!(
            bucket.key("plays/date=2026-11-30/part-x.parquet").as_ref(),
            "basra/export/plays/date=2026-11-30/part-x.parquet"
        );
        assert_eq!(
            bucket.location("_watermark.json"),
            "s3://analytics/basra/export/_watermark.json"
        );
        let root = Bucket::open("s3://analytics", Vec::new()).unwrap();
        assert_eq!(root.key("_watermark.json").as_ref(), "_watermark.json");
    }

    #[test]
    fn other_schemes_are_refused_with_the_reason() {
        let err = Bucket::open("gs://bucket/x", Vec::new()).unwrap_err();
        assert!(err.to_string().contains("s3://bucket/prefix"), "{err}");
    }
}
