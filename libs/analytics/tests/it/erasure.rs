//! Erasure: a deleted player is gone from the export within one export cycle. After a
//! deletion, the next incremental run rewrites every `match_players` file an earlier run
//! wrote that names the old id, so that each seat shows exactly the anonymous key the
//! views show; in a directory, and in object storage (moto's S3 server) with the rewrite
//! interrupted and resumed.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use accounts::PgStore;
use accounts::store::prelude::*;
use arrow_array::cast::AsArray;
use arrow_array::types::Int16Type;
use arrow_array::{Array as _, RecordBatch};
use basra_analytics::dataset;
use basra_analytics::export::erasure::Erased;
use basra_analytics::export::tables::Table;
use basra_analytics::export::{Output, export};
use basra_records::corpus::Player;
use basra_testkit::moto::Moto;
use bytes::Bytes;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use sqlx::PgPool;
use uuid::Uuid;

use crate::helpers::{export_options, players, record_matches, scalar};
use crate::s3::{BUCKET, assert_exactly_the_records, bucket, failing, objects, table_batches};

/// The `user_id`s of a `match_players` batch, by (match, seat).
fn seat_ids(batches: &[RecordBatch]) -> Vec<((String, i16), Option<String>)> {
    let mut out = Vec::new();
    for batch in batches {
        let matches = batch.column_by_name("match_id").unwrap().as_string::<i32>();
        let seats = batch
            .column_by_name("seat")
            .unwrap()
            .as_primitive::<Int16Type>();
        let users = batch.column_by_name("user_id").unwrap().as_string::<i32>();
        for row in 0..batch.num_rows() {
            out.push((
                (matches.value(row).to_owned(), seats.value(row)),
                users.is_valid(row).then(|| users.value(row).to_owned()),
            ));
        }
    }
    out
}

fn names(batches: &[RecordBatch], id: Uuid) -> bool {
    let id = id.to_string();
    seat_ids(batches)
        .iter()
        .any(|(_, user)| user.as_deref() == Some(id.as_str()))
}

/// Every exported seat shows what `analyst.match_players` shows for it, and every user
/// id is a row of `analyst.players`: no seat names an id that exists nowhere else.
async fn assert_seats_as_the_views_show(pool: &PgPool, files: &[Vec<RecordBatch>]) {
    let view: HashMap<(String, i16), Option<String>> =
        sqlx::query_as::<_, (String, i16, Option<String>)>(
            "SELECT match_id, seat, user_id::TEXT FROM analyst.match_players",
        )
        .fetch_all(pool)
        .await
        .unwrap()
        .into_iter()
        .map(|(m, s, u)| ((m, s), u))
        .collect();
    let known: std::collections::HashSet<String> =
        sqlx::query_scalar("SELECT user_id::TEXT FROM analyst.players")
            .fetch_all(pool)
            .await
            .unwrap()
            .into_iter()
            .collect();
    let mut seats = 0;
    for batches in files {
        for (seat, user) in seat_ids(batches) {
            assert_eq!(view[&seat], user, "seat {seat:?}");
            if let Some(user) = user {
                assert!(known.contains(&user), "{user} is in no players row");
            }
            seats += 1;
        }
    }
    assert_eq!(
        seats,
        scalar(pool, "SELECT count(*) FROM analyst.match_players").await
    );
}

fn read(file: &Path) -> Vec<RecordBatch> {
    ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(file).unwrap())
        .unwrap()
        .build()
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

fn all_but(people: &[Player], gone: Uuid) -> Vec<Player> {
    people
        .iter()
        .filter(|p| p.user_id != gone)
        .cloned()
        .collect()
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn a_deleted_player_is_gone_from_a_directory_export_after_the_next_run(pool: PgPool) {
    let store = PgStore::new(pool.clone());
    let people = players(&store, 8).await;
    record_matches(&store, &people, 40, 5, 81).await;
    let dir = std::env::temp_dir().join(format!("basra-erasure-{}", Uuid::now_v7()));
    export(&pool, &export_options(dir.as_path())).await.unwrap();

    let gone = people[2].user_id;
    let before: BTreeMap<PathBuf, Vec<u8>> = dataset::files(&dir, Table::MatchPlayers)
        .unwrap()
        .into_iter()
        .map(|f| (f.clone(), std::fs::read(f).unwrap()))
        .collect();
    let holding: Vec<&PathBuf> = before.keys().filter(|f| names(&read(f), gone)).collect();
    assert!(holding.len() >= 2, "{holding:?}");
    let key = accounts::deletion::anonymous_key();
    store
        .delete_account(gone, key, chrono::Utc::now())
        .await
        .unwrap();
    record_matches(&store, &all_but(&people, gone), 10, 5, 82).await;

    let next = export(&pool, &export_options(dir.as_path())).await.unwrap();
    assert_eq!(next.matches, 10);
    assert_eq!(next.erasure.deletions, 1);
    let rewritten: Vec<String> = holding.iter().map(|f| f.display().to_string()).collect();
    assert_eq!(next.erasure.files, rewritten);
    let old_seats = scalar_of(&pool, key).await;
    assert_eq!(next.erasure.seats, old_seats);
    assert!(
        next.describe().contains(&format!(
            "erasure: {} files rewritten for 1 deleted players",
            holding.len()
        )),
        "{}",
        next.describe()
    );
    // No file names the old id; every seat shows the view's key; the files that did not
    // name it are byte for byte as they were.
    let files = dataset::files(&dir, Table::MatchPlayers).unwrap();
    let contents: Vec<Vec<RecordBatch>> = files.iter().map(|f| read(f)).collect();
    assert!(!contents.iter().any(|b| names(b, gone)));
    assert!(contents.iter().any(|b| names(b, key)));
    assert_seats_as_the_views_show(&pool, &contents).await;
    for (file, bytes) in &before {
        if !holding.contains(&file) {
            assert_eq!(&std::fs::read(file).unwrap(), bytes, "{}", file.display());
        }
    }
    let erased = Erased::read(&Output::Dir(dir.clone())).await.unwrap();
    assert_eq!(erased.keys, [key].into());

    // The next run owes nothing.
    let quiet = export(&pool, &export_options(dir.as_path())).await.unwrap();
    assert_eq!((quiet.erasure.deletions, quiet.erasure.files.len()), (0, 0));
    std::fs::remove_dir_all(dir).unwrap();
}

/// The seats `key` holds in the views.
async fn scalar_of(pool: &PgPool, key: Uuid) -> u64 {
    let n: i64 =
        sqlx::query_scalar("SELECT count(*) FROM analyst.match_players WHERE user_id = $1")
            .bind(key)
            .fetch_one(pool)
            .await
            .unwrap();
    n as u64
}

/// The `match_players` objects naming `id`.
fn objects_naming(objects: &BTreeMap<String, Bytes>, id: Uuid) -> Vec<String> {
    table_batches(objects, Table::MatchPlayers)
        .into_iter()
        .filter(|(_, batches)| names(batches, id))
        .map(|(key, _)| key)
        .collect()
}

#[sqlx::test(migrator = "accounts::store::MIGRATOR")]
async fn a_deleted_player_is_gone_from_an_s3_export_after_an_interrupted_rewrite_is_resumed(
    pool: PgPool,
) {
    let moto = Moto::start();
    moto.create_bucket(BUCKET);
    let store = PgStore::new(pool.clone());
    let people = players(&store, 8).await;
    record_matches(&store, &people, 40, 6, 91).await;
    let bucket = bucket(&moto, "erasure");
    export(&pool, &export_options(Output::Bucket(bucket.clone())))
        .await
        .unwrap();
    let gone = people[3].user_id;
    let exported = objects(&bucket).await;
    let holding = objects_naming(&exported, gone);
    assert!(holding.len() >= 3, "{holding:?}");
    let key = accounts::deletion::anonymous_key();
    store
        .delete_account(gone, key, chrono::Utc::now())
        .await
        .unwrap();

    // 1. The rewrite fails after one object (nothing new was recorded: the run's only
    //    match_players uploads are the rewrites): one object no longer names the old id,
    //    the others still do; nothing says the deletion was erased; the watermark stays.
    let err = export(
        &pool,
        &export_options(failing(&bucket, 1, |p| {
            p.as_ref().contains("/match_players/")
        })),
    )
    .await
    .unwrap_err();
    assert!(format!("{err:#}").contains("injected failure"), "{err:#}");
    let interrupted = objects(&bucket).await;
    assert_eq!(objects_naming(&interrupted, gone).len(), holding.len() - 1);
    assert!(!interrupted.contains_key("_erased.json"));
    assert_eq!(interrupted["_watermark.json"], exported["_watermark.json"]);

    // 2. More matches; the run is made again: it rewrites the objects left, and then no
    //    object names the old id, every seat shows the views' key, every record once.
    record_matches(&store, &all_but(&people, gone), 12, 6, 92).await;
    let resumed = export(&pool, &export_options(Output::Bucket(bucket.clone())))
        .await
        .unwrap();
    assert_eq!(resumed.matches, 12);
    assert_eq!(resumed.erasure.deletions, 1);
    assert_eq!(resumed.erasure.files.len(), holding.len() - 1);
    let last = objects(&bucket).await;
    assert!(objects_naming(&last, gone).is_empty());
    assert_eq!(objects_naming(&last, key).len(), holding.len());
    let files: Vec<Vec<RecordBatch>> = table_batches(&last, Table::MatchPlayers)
        .into_values()
        .collect();
    assert_seats_as_the_views_show(&pool, &files).await;
    assert_exactly_the_records(&pool, &last).await;
    let erased: Erased = serde_json::from_slice(&last["_erased.json"]).unwrap();
    assert_eq!(erased.keys, [key].into());

    // 3. A run after it owes nothing and rewrites nothing.
    let quiet = export(&pool, &export_options(Output::Bucket(bucket.clone())))
        .await
        .unwrap();
    assert_eq!((quiet.erasure.deletions, quiet.erasure.files.len()), (0, 0));
    let match_players = |objects: &BTreeMap<String, Bytes>| -> Vec<(String, Bytes)> {
        objects
            .iter()
            .filter(|(k, _)| k.starts_with("match_players/"))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    assert_eq!(match_players(&objects(&bucket).await), match_players(&last));
}
