//! Export into object storage, against a real S3-compatible server (moto's, started on a
//! free loopback port by each test and stopped after it): the objects hold what a
//! directory export holds, and an export interrupted (an upload that fails after a few
//! objects, or before the watermark) is resumed without a duplicate row; what a killed
//! run left in its local staging directory is cleared by the next.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use accounts::PgStore;
use arrow_array::RecordBatch;
use arrow_array::cast::AsArray;
use async_trait::async_trait;
use basra_analytics::dataset;
use basra_analytics::export::bucket::Bucket;
use basra_analytics::export::staging::{self, Staging};
use basra_analytics::export::tables::{TABLES, Table};
use basra_analytics::export::{ExportOptions, ExportSummary, Output, export};
use basra_testkit::moto::Moto;
use bytes::Bytes;
use futures_core::stream::BoxStream;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    ObjectStoreExt as _, PutMultipartOptions, PutOptions, PutPayload, PutResult,
};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use sqlx::PgPool;
use tokio_stream::StreamExt as _;

use crate::helpers::{export_options, players, record_matches, scalar};

pub(crate) const BUCKET: &str = "basra-analytics";

fn options(out: Output) -> ExportOptions {
    export_options(out)
}

/// The bucket `s3://basra-analytics/<prefix>` on `moto`, configured as the CLI
/// configures it: from `AWS_*` variables.
pub(crate) fn bucket(moto: &Moto, prefix: &str) -> Bucket {
    Bucket::open(&format!("s3://{BUCKET}/{prefix}"), moto.env()).unwrap()
}

/// Every object under the bucket's prefix: key (relative to the prefix) → bytes.
pub(crate) async fn objects(bucket: &Bucket) -> BTreeMap<String, Bytes> {
    let (store, prefix) = bucket.store();
    let metas: Vec<ObjectMeta> = store
        .list(Some(prefix))
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let mut out = BTreeMap::new();
    for meta in metas {
        let bytes = store
            .get(&meta.location)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let key = meta
            .location
            .as_ref()
            .strip_prefix(prefix.as_ref())
            .unwrap()
            .trim_start_matches('/')
            .to_owned();
        out.insert(key, bytes);
    }
    out
}

/// The Parquet objects of `table`, decoded, by key.
pub(crate) fn table_batches(
    objects: &BTreeMap<String, Bytes>,
    table: Table,
) -> BTreeMap<String, Vec<RecordBatch>> {
    objects
        .iter()
        .filter(|(key, _)| {
            key.starts_with(&format!("{}/date=", table.name())) && key.ends_with(".parquet")
        })
        .map(|(key, bytes)| {
            let batches = ParquetRecordBatchReaderBuilder::try_new(bytes.clone())
                .unwrap()
                .build()
                .unwrap()
                .map(Result::unwrap)
                .collect();
            (key.clone(), batches)
        })
        .collect()
}

fn row_count(objects: &BTreeMap<String, Bytes>, table: Table) -> i64 {
    table_batches(objects, table)
        .values()
        .flatten()
        .map(|b| b.num_rows() as i64)
        .sum()
}

/// The match ids of the exported `matches` table, each as often as it is there.
fn exported_match_ids(objects: &BTreeMap<String, Bytes>) -> Vec<String> {
    table_batches(objects, Table::Matches)
        .values()
        .flatten()
        .flat_map(|b| {
            b.column_by_name("match_id")
                .unwrap()
                .as_string::<i32>()
                .iter()
                .map(|id| id.unwrap().to_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The objects hold exactly the records: every match once, every seat, round and play.
pub(crate) async fn assert_exactly_the_records(pool: &PgPool, objects: &BTreeMap<String, Bytes>) {
    let ids = exported_match_ids(objects);
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "a match exported twice");
    assert_eq!(
        ids.len() as i64,
        scalar(pool, "SELECT count(*) FROM analyst.matches").await
    );
    assert_eq!(
        row_count(objects, Table::MatchPlayers),
        scalar(pool, "SELECT count(*) FROM analyst.match_players").await
    );
    assert_eq!(
        row_count(objects, Table::Rounds),
        scalar(pool, "SELECT count(*) FROM analyst.rounds").await
    );
    assert_eq!(
        row_count(objects, Table::Plays),
        scalar(pool, "SELECT sum(plays) FROM analyst.matches").await
    );
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("basra-s3-{name}-{}", uuid::Uuid::now_v7()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn an_export_to_s3_holds_what_a_directory_export_holds(pool: PgPool) {
    let moto = Moto::start();
    moto.create_bucket(BUCKET);
    let store = PgStore::new(pool.clone());
    let people = players(&store, 8).await;
    record_matches(&store, &people, 40, 5, 61).await;

    let dir = temp_dir("same");
    let local = export(&pool, &options(Output::Dir(dir.clone())))
        .await
        .unwrap();
    // The CLI's parsing of --out, with the AWS_* variables it reads from the environment.
    let out = Output::parse(&format!("s3://{BUCKET}/exports/basra"), moto.env()).unwrap();
    let Output::Bucket(remote_bucket) = out.clone() else {
        panic!("s3:// is object storage")
    };
    let remote = export(&pool, &options(out)).await.unwrap();
    assert_eq!(remote.matches, 40);
    assert_eq!(remote.rows, local.rows);
    assert_eq!(remote.files.len(), local.files.len());
    assert!(
        remote
            .files
            .iter()
            .all(|f| f.starts_with("s3://basra-analytics/exports/basra/")),
        "{:?}",
        remote.files
    );

    // The same keys, the same rows, as a directory export.
    let objects = objects(&remote_bucket).await;
    for table in TABLES {
        let remote_batches = table_batches(&objects, table);
        let local_files = dataset::files(&dir, table).unwrap();
        assert_eq!(remote_batches.len(), local_files.len(), "{}", table.name());
        for file in local_files {
            let key = file
                .strip_prefix(&dir)
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            assert!(key.ends_with("/part-from-start.parquet"), "{key}");
            let local_batches: Vec<RecordBatch> =
                ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&file).unwrap())
                    .unwrap()
                    .build()
                    .unwrap()
                    .map(Result::unwrap)
                    .collect();
            assert_eq!(remote_batches[&key], local_batches, "{key}");
        }
    }
    assert_exactly_the_records(&pool, &objects).await;
    // The players snapshot, the watermark; no run pending; nothing else.
    let snapshot: usize =
        ParquetRecordBatchReaderBuilder::try_new(objects["players/players.parquet"].clone())
            .unwrap()
            .build()
            .unwrap()
            .map(|b| b.unwrap().num_rows())
            .sum();
    assert_eq!(
        snapshot as i64,
        scalar(&pool, "SELECT count(*) FROM analyst.players").await
    );
    assert_eq!(remote.players, 8);
    let watermark: serde_json::Value = serde_json::from_slice(&objects["_watermark.json"]).unwrap();
    assert_eq!(
        watermark["recorded_before"].as_str().unwrap(),
        serde_json::to_value(remote.recorded_before).unwrap()
    );
    assert!(!objects.contains_key("_pending.json"));
    assert_eq!(objects.len(), remote.files.len() + 2);

    // Run again: nothing new, no new object, the watermark read from the bucket.
    let again = export(&pool, &options(Output::Bucket(remote_bucket.clone())))
        .await
        .unwrap();
    assert_eq!((again.matches, again.files.len()), (0, 0));
    assert_eq!(again.recorded_from, Some(remote.recorded_before));
    assert_eq!(objects_count(&remote_bucket).await, objects.len());
    std::fs::remove_dir_all(dir).unwrap();
}

async fn objects_count(bucket: &Bucket) -> usize {
    objects(bucket).await.len()
}

/// An object store that fails the uploads matching `fails` once `allowed` of them went
/// through: the export stops there as if the process had been killed mid-run.
#[derive(Debug)]
struct FailAfter {
    inner: Arc<dyn ObjectStore>,
    allowed: AtomicI64,
    fails: fn(&Path) -> bool,
}

impl FailAfter {
    fn check(&self, location: &Path) -> object_store::Result<()> {
        if (self.fails)(location) && self.allowed.fetch_sub(1, Ordering::SeqCst) <= 0 {
            return Err(object_store::Error::Generic {
                store: "FailAfter",
                source: format!("injected failure uploading {location}").into(),
            });
        }
        Ok(())
    }
}

impl std::fmt::Display for FailAfter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FailAfter({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for FailAfter {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> object_store::Result<PutResult> {
        self.check(location)?;
        self.inner.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> object_store::Result<Box<dyn MultipartUpload>> {
        self.check(location)?;
        self.inner.put_multipart_opts(location, opts).await
    }

    async fn get_opts(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> object_store::Result<GetResult> {
        self.inner.get_opts(location, options).await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, object_store::Result<Path>>,
    ) -> BoxStream<'static, object_store::Result<Path>> {
        self.inner.delete_stream(locations)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
        self.inner.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> object_store::Result<ListResult> {
        self.inner.list_with_delimiter(prefix).await
    }

    async fn copy_opts(
        &self,
        from: &Path,
        to: &Path,
        options: CopyOptions,
    ) -> object_store::Result<()> {
        self.inner.copy_opts(from, to, options).await
    }
}

pub(crate) fn failing(bucket: &Bucket, allowed: i64, fails: fn(&Path) -> bool) -> Output {
    let (store, _) = bucket.store();
    Output::Bucket(bucket.with_store(Arc::new(FailAfter {
        inner: store.clone(),
        allowed: AtomicI64::new(allowed),
        fails,
    })))
}

/// The keys of the day-partitioned Parquet objects.
pub(crate) fn parquet_keys(objects: &BTreeMap<String, Bytes>) -> HashSet<String> {
    objects
        .keys()
        .filter(|k| k.contains("/date=") && k.ends_with(".parquet"))
        .cloned()
        .collect()
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn an_interrupted_export_to_s3_is_resumed_without_duplicates(pool: PgPool) {
    let moto = Moto::start();
    moto.create_bucket(BUCKET);
    let store = PgStore::new(pool.clone());
    let people = players(&store, 8).await;
    record_matches(&store, &people, 40, 6, 71).await;
    let bucket = bucket(&moto, "nightly");

    // 1. The upload fails after 5 Parquet objects: the run fails, 5 objects are there,
    //    the watermark is not, the run is pending.
    let err = export(
        &pool,
        &options(failing(&bucket, 5, |p| p.as_ref().ends_with(".parquet"))),
    )
    .await
    .unwrap_err();
    assert!(format!("{err:#}").contains("injected failure"), "{err:#}");
    let interrupted = objects(&bucket).await;
    let interrupted_keys = parquet_keys(&interrupted);
    assert_eq!(interrupted_keys.len(), 5, "{interrupted_keys:?}");
    assert!(!interrupted.contains_key("_watermark.json"));
    assert!(interrupted.contains_key("_pending.json"));
    assert!(!exported_match_ids(&interrupted).is_empty());

    // 2. More matches are recorded meanwhile; the run is made again and completes. It
    //    wrote every key the interrupted run had written (replaced, not added beside),
    //    and the bucket holds each record exactly once.
    record_matches(&store, &people, 15, 6, 72).await;
    let resumed = export(&pool, &options(Output::Bucket(bucket.clone())))
        .await
        .unwrap();
    assert_eq!(resumed.matches, 55);
    assert_eq!(resumed.recorded_from, None, "the first run's watermark");
    let after = objects(&bucket).await;
    let keys = parquet_keys(&after);
    assert!(interrupted_keys.is_subset(&keys));
    assert_eq!(keys.len(), resumed.files.len());
    assert!(!after.contains_key("_pending.json"));
    assert_exactly_the_records(&pool, &after).await;

    // 3. The next run is interrupted after all its Parquet objects, before the watermark
    //    (the worst moment: every row is in, the watermark does not say so).
    record_matches(&store, &people, 12, 2, 73).await;
    let err = export(
        &pool,
        &options(failing(&bucket, 0, |p| {
            p.as_ref().ends_with("_watermark.json")
        })),
    )
    .await
    .unwrap_err();
    assert!(format!("{err:#}").contains("injected failure"), "{err:#}");
    let before_watermark = objects(&bucket).await;
    assert!(parquet_keys(&before_watermark).len() > keys.len());
    assert_eq!(exported_match_ids(&before_watermark).len(), 67);
    // Run again: the same names, every row once.
    let again = export(&pool, &options(Output::Bucket(bucket.clone())))
        .await
        .unwrap();
    assert_eq!(again.matches, 12);
    assert_eq!(again.recorded_from, Some(resumed.recorded_before));
    let last = objects(&bucket).await;
    assert_eq!(parquet_keys(&last), parquet_keys(&before_watermark));
    assert_exactly_the_records(&pool, &last).await;

    // 4. And a run with nothing new adds nothing.
    let quiet: ExportSummary = export(&pool, &options(Output::Bucket(bucket.clone())))
        .await
        .unwrap();
    assert_eq!((quiet.matches, quiet.files.len()), (0, 0));
    assert_eq!(objects(&bucket).await.len(), last.len());
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn an_export_to_s3_clears_its_staging_directory_and_refuses_a_second_run_into_it(
    pool: PgPool,
) {
    let moto = Moto::start();
    moto.create_bucket(BUCKET);
    let store = PgStore::new(pool.clone());
    let people = players(&store, 4).await;
    record_matches(&store, &people, 10, 2, 101).await;
    let output = Output::Bucket(bucket(&moto, "staged"));
    let staged = staging::dir_for(&output, &std::env::temp_dir());

    // What a run killed mid-upload leaves: a finished day file not yet uploaded, and one
    // half written.
    let day = staged.join("matches/date=2026-11-19");
    std::fs::create_dir_all(&day).unwrap();
    std::fs::write(day.join("part-from-start.parquet"), b"finished").unwrap();
    std::fs::write(day.join(".part-from-start.parquet.tmp"), b"half").unwrap();
    let summary = export(&pool, &options(output.clone())).await.unwrap();
    assert_eq!(summary.matches, 10);
    assert!(!staged.exists(), "{} is still there", staged.display());

    // While a run holds the staging directory, another run into the same output is
    // refused and leaves the first one's files alone.
    let held = Staging::for_output(&output).unwrap();
    let file = held.root().join("in-progress");
    std::fs::write(&file, b"uploading").unwrap();
    let err = export(&pool, &options(output.clone())).await.unwrap_err();
    assert!(format!("{err:#}").contains("another export"), "{err:#}");
    assert!(file.exists());
    drop(held);
    assert!(!staged.exists());
    assert!(!staged.with_extension("lock").exists());
}
