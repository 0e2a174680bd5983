//! The descriptor set exported for reflection holds every service and RPC.

use std::collections::BTreeSet;

use basra_proto::FILE_DESCRIPTOR_SET;
use prost::Message as _;
use prost_types::FileDescriptorSet;

/// The RPC names of `package.Service`, or `None` if the service is missing.
fn rpcs(fds: &FileDescriptorSet, package: &str, service: &str) -> Option<BTreeSet<String>> {
    fds.file
        .iter()
        .filter(|file| file.package() == package)
        .flat_map(|file| &file.service)
        .find(|svc| svc.name() == service)
        .map(|svc| svc.method.iter().map(|m| m.name().to_owned()).collect())
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|&n| n.to_owned()).collect()
}

#[test]
fn descriptor_set_lists_every_service_and_rpc() {
    let fds = FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).expect("descriptor set decodes");

    let expected = [
        (
            "basra.accounts.v1",
            "AccountsService",
            set(&[
                "GuestLogin",
                "Register",
                "Login",
                "Refresh",
                "Logout",
                "GetProfile",
                "SetDisplayName",
                "Leaderboard",
                "MatchHistory",
                "AddFriend",
                "AcceptFriend",
                "DeclineFriend",
                "CancelFriend",
                "RemoveFriend",
                "BlockPlayer",
                "UnblockPlayer",
                "ListFriends",
                "WatchFriends",
                "ChangePassword",
                "DeleteAccount",
                "ExportMyData",
                "SignInWithProvider",
                "LinkPassword",
                "LinkProvider",
                "RegisterPushToken",
                "RemovePushToken",
                "ReportPlayer",
                "ListNotices",
                "MarkNoticesRead",
                "CountUnreadNotices",
                "ListSeasons",
                "GetReplay",
            ]),
        ),
        (
            "basra.accounts.v1",
            "AccountsInternalService",
            set(&[
                "RecordMatch",
                "RecordMatches",
                "GetPlayers",
                "ReportPresence",
                "SendInvite",
                "SendNotice",
                "SendNotices",
            ]),
        ),
        (
            "basra.accounts.v1",
            "AccountsAdminService",
            set(&[
                "BanPlayer",
                "UnbanPlayer",
                "RenamePlayer",
                "DeletePlayer",
                "FindPlayers",
                "GetPlayer",
                "ExportPlayerData",
                "ListReports",
                "GetReports",
                "ResolveReports",
            ]),
        ),
        (
            "basra.matchmaking.v1",
            "MatchmakingService",
            set(&[
                "FindMatch",
                "CancelFind",
                "CreateRoom",
                "ListPublicRooms",
                "JoinRoom",
                "InviteFriend",
                "GetCurrentSeat",
            ]),
        ),
        (
            "basra.matchmaking.v1",
            "EventService",
            set(&[
                "ListEvents",
                "GetEvent",
                "Register",
                "Withdraw",
                "CheckIn",
                "WatchEvent",
                "GetMyMatch",
                "GetStandings",
                "ListMyEvents",
            ]),
        ),
        (
            "basra.matchmaking.v1",
            "EventAdminService",
            set(&["CreateEvent", "ListAllEvents", "CancelEvent"]),
        ),
        (
            "basra.game.v1",
            "GameService",
            set(&[
                "Play",
                "Watch",
                "PlayCard",
                "Resign",
                "QuickChat",
                "AskRematch",
            ]),
        ),
        (
            "basra.game.v1",
            "GameInternalService",
            set(&[
                "CreateRoom",
                "CreateRooms",
                "SeatPlayer",
                "GetSeat",
                "GetSeats",
            ]),
        ),
        (
            "basra.game.v1",
            "GameAdminService",
            set(&[
                "ListRooms",
                "GetRoom",
                "CloseRoom",
                "DrainReplica",
                "UndrainReplica",
            ]),
        ),
    ];
    let services: BTreeSet<String> = fds
        .file
        .iter()
        .flat_map(|file| {
            file.service
                .iter()
                .map(|svc| format!("{}.{}", file.package(), svc.name()))
        })
        .collect();
    let listed: BTreeSet<String> = expected
        .iter()
        .map(|(package, service, _)| format!("{package}.{service}"))
        .collect();
    assert_eq!(services, listed, "every service is listed here");
    for (package, service, methods) in expected {
        let found = rpcs(&fds, package, service)
            .unwrap_or_else(|| panic!("service {package}.{service} is missing"));
        assert_eq!(found, methods, "RPCs of {package}.{service}");
    }
}

/// The internal services live in `internal.proto` files, which the SDK and the web client
/// leave out, and no other file declares a service that is not a client's or an
/// operator's.
#[test]
fn internal_services_are_alone_in_their_internal_files() {
    let fds = FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).expect("descriptor set decodes");
    for file in &fds.file {
        for svc in &file.service {
            let internal = svc.name().ends_with("InternalService");
            let in_internal_file = file.name().ends_with("/internal.proto");
            assert_eq!(
                internal,
                in_internal_file,
                "{} in {}: internal services, and only they, go in internal.proto",
                svc.name(),
                file.name()
            );
        }
    }
}

#[test]
fn play_is_bidirectional_and_find_match_server_streaming() {
    let fds = FileDescriptorSet::decode(FILE_DESCRIPTOR_SET).expect("descriptor set decodes");
    let method = |package: &str, service: &str, name: &str| {
        fds.file
            .iter()
            .filter(|f| f.package() == package)
            .flat_map(|f| &f.service)
            .filter(|s| s.name() == service)
            .flat_map(|s| &s.method)
            .find(|m| m.name() == name)
            .cloned()
            .unwrap_or_else(|| panic!("{package}.{service}/{name} is missing"))
    };

    let play = method("basra.game.v1", "GameService", "Play");
    assert!(play.client_streaming() && play.server_streaming());
    let find = method("basra.matchmaking.v1", "MatchmakingService", "FindMatch");
    assert!(!find.client_streaming() && find.server_streaming());
}
