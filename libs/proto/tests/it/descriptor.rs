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
                "RecordMatch",
                "RecordMatches",
                "GetPlayers",
                "AddFriend",
                "AcceptFriend",
                "DeclineFriend",
                "CancelFriend",
                "RemoveFriend",
                "BlockPlayer",
                "UnblockPlayer",
                "ListFriends",
                "WatchFriends",
                "ReportPresence",
                "SendInvite",
                "ChangePassword",
                "DeleteAccount",
                "ExportMyData",
                "SignInWithProvider",
                "LinkPassword",
                "LinkProvider",
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
            ]),
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
                "CreateRoom",
                "SeatPlayer",
                "GetSeat",
            ]),
        ),
        (
            "basra.game.v1",
            "GameAdminService",
            set(&["ListRooms", "GetRoom", "CloseRoom", "DrainReplica"]),
        ),
    ];
    for (package, service, methods) in expected {
        let found = rpcs(&fds, package, service)
            .unwrap_or_else(|| panic!("service {package}.{service} is missing"));
        assert_eq!(found, methods, "RPCs of {package}.{service}");
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
