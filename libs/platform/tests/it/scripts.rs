//! [`run_script`] against a real Redis (`REDIS_URL`) and the local Redis Cluster
//! (`REDIS_CLUSTER_URL`): a call built with [`script_call`] passes its keys and
//! arguments in order, and is answered after the server forgot its scripts (what a
//! restart or a failover does), because the script is loaded and the call sent again.
//! Both URLs must be set: these tests fail when the servers are missing.

use basra_platform::redis::{Keys, Redis, Script, run_script, script_call};

const ECHO: &str = "redis.call('SET', KEYS[1], ARGV[1]) \
    return {KEYS[1], KEYS[2], ARGV[1], ARGV[2], redis.call('GET', KEYS[1])}";

async fn a_call_survives_a_flushed_script_cache(url: &str) {
    let redis = Redis::connect(url).await.expect("connect to Redis");
    let keys = Keys::new(&format!("scripts-test-{}", uuid::Uuid::now_v7())).unwrap();
    let (first, second) = (keys.key_of(&["t:", "1"], &["a"]), keys.key("t:1", "b"));
    let script = Script::new(ECHO);
    let mut call = script_call(&script, 2, 4, 64);
    call.arg(&first).arg(&second).arg("one").arg(2);
    let mut conn = redis.conn();
    // Nobody has loaded the script yet on this server (or it was flushed).
    let () = redis::cmd("SCRIPT")
        .arg("FLUSH")
        .query_async(&mut conn)
        .await
        .expect("SCRIPT FLUSH");
    let answer: Vec<String> = run_script(&script, &call, &mut conn)
        .await
        .expect("the call");
    let expected = vec![
        first.clone(),
        second.clone(),
        "one".into(),
        "2".into(),
        "one".into(),
    ];
    assert_eq!(answer, expected);
    // Loaded now: answered at once, the same.
    let again: Vec<String> = run_script(&script, &call, &mut conn).await.expect("again");
    assert_eq!(again, expected);
    let () = redis::cmd("DEL")
        .arg(&first)
        .arg(&second)
        .query_async(&mut conn)
        .await
        .expect("clean up");
}

#[tokio::test]
async fn a_script_call_survives_a_flushed_script_cache_on_one_node() {
    a_call_survives_a_flushed_script_cache(&basra_testkit::redis_url()).await;
}

#[tokio::test]
async fn a_script_call_survives_a_flushed_script_cache_on_a_cluster() {
    a_call_survives_a_flushed_script_cache(&basra_testkit::redis_cluster_url()).await;
}
