//! The store contract: one suite, written once as generic functions in a module per
//! role of the store (`sign_in`, `profiles`, `friends`, `records`, `pushes`, `reports`,
//! `inbox`, `seasons`), run against
//! [`MemoryStore`](accounts::MemoryStore) and against [`PgStore`](accounts::PgStore) on a
//! fresh PostgreSQL database per test (`#[sqlx::test]`, which needs `DATABASE_URL` and
//! fails when PostgreSQL is unreachable). Moderation (deletion, audit) is held to the same
//! behaviour on both stores through the service: `account.rs`, `admin.rs`,
//! `admin_lookup.rs`.

use crate::helpers::{at, duel, record};
use accounts::AccountsError;
use accounts::domain::{DeviceId, DisplayName, Username};
use accounts::friends::{Action, FriendCode, FriendLimits, Outcome, Refusal};
use accounts::names::{NameChange, NameChangeLimit};
use accounts::rating::Rating;
use accounts::refresh::{NewRefreshToken, RefreshTokenRecord, TokenState};
use accounts::store::{
    GuestUpgrade, LeaderboardRules, NewAccount, NewGuest, NewSession, Rotation, Store, User,
};
use chrono::{DateTime, Utc};
use tokio::task::JoinSet;
use uuid::Uuid;

mod friends;
mod inbox;
mod profiles;
mod pushes;
mod records;
mod reports;
mod seasons;
mod sign_in;

on_both_stores! {
    cases in sign_in {
        guest_login_gives_one_user_per_device,
        concurrent_first_logins_of_a_device_make_one_guest,
        accounts_are_unique_by_case_insensitive_username,
        guest_upgrade_keeps_the_user_and_revokes_its_tokens,
        guest_upgrade_refusals_change_nothing,
        refresh_tokens_rotate_once_and_reuse_revokes_the_family,
        expired_and_unknown_refresh_tokens_are_refused,
        concurrent_rotations_of_one_token_have_one_winner,
        logout_revokes_one_family_or_every_token,
        sign_in_clients_are_kept_oldest_first,
    }
    cases in profiles {
        leaderboard_order_ties_and_pages,
        display_name_changes_are_limited_per_rolling_window,
        concurrent_display_name_changes_count_each_other,
    }
    cases in friends {
        friend_request_accept_remove,
        asking_back_accepts_and_refusals_write_nothing,
        a_block_ends_everything_and_is_private,
        friend_limits_hold,
        concurrent_requests_between_two_players_make_one_friendship,
        friend_codes_are_given_once_and_find_their_owner,
    }
    cases in inbox {
        notices_are_kept_once_per_key_and_listed_newest_first_in_pages,
        notices_are_marked_read_by_their_owner_only,
        notices_expire_and_the_bound_drops_the_oldest,
        a_deleted_account_takes_its_notices_and_those_naming_it,
        a_batch_of_notices_is_kept_as_one_by_one_in_its_order,
    }
    cases in records {
        ranked_match_is_recorded_once_and_rates_once,
        unranked_closed_and_bot_matches_change_no_rating,
        partnership_match_rates_every_human,
        match_with_unknown_user_writes_nothing,
        match_history_newest_first_in_pages,
        each_seat_keeps_its_players_client_app_at_the_matchs_end,
        analyses_are_kept_per_seat_and_read_back_whatever_their_worlds,
    }
    cases in pushes {
        push_devices_register_move_and_go,
        the_outbox_is_claimed_by_lease_and_settled_under_its_claim,
        the_per_player_limit_counts_notices_per_window,
    }
    cases in reports {
        reports_are_filed_under_the_limit_and_refusals_store_nothing,
        concurrent_reports_of_one_reporter_count_each_other,
        open_reports_group_by_target_hide_names_and_resolve,
    }
    cases in seasons {
        seasons_reset_softly_once_and_keep_the_finished_leaderboard,
        a_rating_moved_on_before_the_closing_keeps_its_finished_season_value,
    }
}

fn guest(name: &str) -> NewGuest {
    NewGuest {
        id: Uuid::now_v7(),
        display_name: DisplayName::parse(name).unwrap(),
        now: at(0),
    }
}

fn session() -> NewSession {
    NewSession {
        hash: NewRefreshToken::generate().hash,
        family_id: Uuid::now_v7(),
        issued_at: at(0),
        expires_at: at(1000),
    }
}

async fn new_guest<S: Store>(store: &S, device: &str) -> User {
    store
        .guest_login(
            &DeviceId::parse(device).unwrap(),
            guest("Guest 1"),
            session(),
        )
        .await
        .unwrap()
}

async fn new_account<S: Store>(store: &S, username: &str) -> User {
    let username = Username::parse(username).unwrap();
    store
        .create_account(NewAccount {
            id: Uuid::now_v7(),
            display_name: DisplayName::from_username(&username).unwrap(),
            username,
            password_hash: "$argon2id$fake".into(),
            now: at(0),
        })
        .await
        .unwrap()
}

fn token_for(
    user: &User,
    family: Uuid,
    expires_at: DateTime<Utc>,
) -> (NewRefreshToken, RefreshTokenRecord) {
    let t = NewRefreshToken::generate();
    let record = RefreshTokenRecord {
        hash: t.hash,
        family_id: family,
        user_id: user.id,
        issued_at: at(0),
        expires_at,
        used_at: None,
        revoked_at: None,
    };
    (t, record)
}

const RULES: LeaderboardRules = LeaderboardRules {
    min_ranked_matches: 1,
};
