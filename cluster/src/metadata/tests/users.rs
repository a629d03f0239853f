//! Tests of users and their personal access tokens.

use super::*;

#[test]
fn create_user_checks_password_and_unique_username() {
    let mut replica = Replica::new();
    let create = |username: &str, password: &str| MetadataOp::CreateUser {
        username: username.into(),
        password: password.into(),
        active: true,
    };
    assert_eq!(replica.apply(create("alice", "")), MetadataReply::InvalidPassword);
    assert_eq!(
        replica.apply(create("alice", "pw")),
        MetadataReply::UserCreated { user_id: 1 }
    );
    assert_eq!(replica.apply(create("alice", "pw2")), MetadataReply::NameAlreadyExists);
    assert_eq!(replica.apply(create("root", "pw")), MetadataReply::NameAlreadyExists);
    let alice = replica.state.user(1).expect("alice");
    assert_eq!(
        alice.permissions,
        Permissions::default(),
        "new users hold no permissions"
    );
    assert_ne!(alice.password_hash, 0);
}

#[test]
fn update_user_renames_and_deactivates() {
    let mut replica = Replica::new();
    let user_id = replica.create_user("alice", "pw");
    replica.create_user("bob", "pw");
    let update = |username: Option<&str>, active: Option<bool>| MetadataOp::UpdateUser {
        user_id,
        username: username.map(str::to_owned),
        active,
    };
    assert_eq!(
        replica.apply(update(Some("bob"), None)),
        MetadataReply::NameAlreadyExists
    );
    assert_eq!(replica.apply(update(Some("alicia"), Some(false))), MetadataReply::Ok);
    assert_eq!(replica.login("alicia", "pw"), MetadataReply::UserInactive);
    assert_eq!(replica.login("alice", "pw"), MetadataReply::InvalidCredentials);
    assert_eq!(replica.apply(update(None, Some(true))), MetadataReply::Ok);
    assert_eq!(logged_in(&replica.login("alicia", "pw")), Some(user_id));
    assert_eq!(
        replica.apply(MetadataOp::UpdateUser {
            user_id: 77,
            username: None,
            active: None
        }),
        MetadataReply::UserNotFound
    );
}

#[test]
fn root_cannot_be_deleted_deactivated_or_have_its_permissions_changed() {
    let mut replica = Replica::new();
    let root = ROOT_USER_ID;
    assert_eq!(
        replica.apply(MetadataOp::DeleteUser { user_id: root }),
        MetadataReply::CannotModifyRoot
    );
    assert_eq!(
        replica.apply(MetadataOp::UpdateUser {
            user_id: root,
            username: None,
            active: Some(false)
        }),
        MetadataReply::CannotModifyRoot
    );
    assert_eq!(
        replica.apply(MetadataOp::UpdatePermissions {
            user_id: root,
            permissions: Permissions::default()
        }),
        MetadataReply::CannotModifyRoot
    );
    let root_user = replica.state.user(root).expect("root");
    assert!(root_user.active);
    assert_eq!(root_user.permissions, Permissions::full());
}

#[test]
fn delete_user_removes_the_user_and_its_tokens() {
    let mut replica = Replica::new();
    let user_id = replica.create_user("alice", "pw");
    let token = replica.create_token(user_id, "ci", 0);
    assert_eq!(replica.apply(MetadataOp::DeleteUser { user_id }), MetadataReply::Ok);
    assert_eq!(
        replica.apply(MetadataOp::DeleteUser { user_id }),
        MetadataReply::UserNotFound
    );
    assert_eq!(
        replica.apply(MetadataOp::LoginWithPersonalAccessToken { token }),
        MetadataReply::InvalidCredentials
    );
}

#[test]
fn change_password_with_a_wrong_current_password_is_invalid_credentials() {
    let mut replica = Replica::new();
    let user_id = replica.create_user("alice", "old");
    let change = |current: &str, new: &str| MetadataOp::ChangePassword {
        user_id,
        current_password: current.into(),
        new_password: new.into(),
    };
    assert_eq!(replica.apply(change("wrong", "new")), MetadataReply::InvalidCredentials);
    assert_eq!(replica.apply(change("old", "")), MetadataReply::InvalidPassword);
    let salt_before = replica.state.user(user_id).map(|u| u.salt);
    assert_eq!(replica.apply(change("old", "new")), MetadataReply::Ok);
    assert_ne!(
        replica.state.user(user_id).map(|u| u.salt),
        salt_before,
        "a new password gets a new salt"
    );
    assert_eq!(replica.login("alice", "old"), MetadataReply::InvalidCredentials);
    assert_eq!(logged_in(&replica.login("alice", "new")), Some(user_id));
    assert_eq!(
        replica.apply(MetadataOp::ChangePassword {
            user_id: 50,
            current_password: "x".into(),
            new_password: "y".into()
        }),
        MetadataReply::UserNotFound
    );
}

#[test]
fn login_does_not_reveal_which_usernames_exist() {
    let mut replica = Replica::new();
    replica.create_user("alice", "pw");
    assert_eq!(replica.login("nobody", "pw"), MetadataReply::InvalidCredentials);
    assert_eq!(replica.login("alice", "nope"), MetadataReply::InvalidCredentials);
}

#[test]
fn update_permissions_requires_existing_streams() {
    let mut replica = Replica::new();
    let user_id = replica.create_user("alice", "pw");
    let stream_id = replica.create_stream("s");
    let mut permissions = Permissions::default();
    permissions.global.read_streams = true;
    permissions.streams.insert(
        stream_id,
        StreamPermissions {
            manage_topics: false,
            read: true,
            write: true,
        },
    );
    let mut dangling = permissions.clone();
    dangling.streams.insert(stream_id + 10, StreamPermissions::default());
    assert_eq!(
        replica.apply(MetadataOp::UpdatePermissions {
            user_id,
            permissions: dangling
        }),
        MetadataReply::StreamNotFound
    );
    assert_eq!(
        replica.apply(MetadataOp::UpdatePermissions {
            user_id,
            permissions: permissions.clone()
        }),
        MetadataReply::Ok
    );
    assert_eq!(replica.state.user(user_id).map(|u| &u.permissions), Some(&permissions));
    assert_eq!(
        replica.apply(MetadataOp::UpdatePermissions {
            user_id: 9,
            permissions
        }),
        MetadataReply::UserNotFound
    );
}

// ---- personal access tokens ----

#[test]
fn a_token_is_valid_before_its_expiry_and_expired_from_it_on() {
    let mut replica = Replica::new();
    let user_id = replica.create_user("alice", "pw");
    let created_at = replica.now_micros + 1_000;
    let token = replica.create_token(user_id, "ci", 5_000);
    let stored = &replica.state.user(user_id).expect("alice").tokens["ci"];
    assert_eq!(stored.expires_at_micros, Some(created_at + 5_000));
    assert_ne!(stored.token_hash, 0);
    assert_eq!(token.len(), TOKEN_CHARS);

    let login = MetadataOp::LoginWithPersonalAccessToken { token: token.clone() };
    // Each op advances the clock by 1 ms; the token lives 5 ms.
    for _ in 0..4 {
        assert_eq!(logged_in(&replica.apply(login.clone())), Some(user_id));
    }
    assert_eq!(replica.now_micros, created_at + 4_000);
    assert_eq!(
        replica.apply(login.clone()),
        MetadataReply::TokenExpired,
        "at its expiry"
    );
    assert_eq!(replica.apply(login), MetadataReply::TokenExpired);
}

#[test]
fn a_token_with_zero_expiry_never_expires_and_can_be_deleted() {
    let mut replica = Replica::new();
    let user_id = replica.create_user("alice", "pw");
    let token = replica.create_token(user_id, "forever", 0);
    replica.now_micros = u64::MAX / 2;
    let login = MetadataOp::LoginWithPersonalAccessToken { token };
    assert_eq!(logged_in(&replica.apply(login.clone())), Some(user_id));
    let delete = MetadataOp::DeletePersonalAccessToken {
        user_id,
        name: "forever".into(),
    };
    assert_eq!(replica.apply(delete.clone()), MetadataReply::Ok);
    assert_eq!(replica.apply(delete), MetadataReply::TokenNotFound);
    assert_eq!(replica.apply(login), MetadataReply::InvalidCredentials);
}

#[test]
fn token_names_are_unique_per_user_and_inactive_users_cannot_use_tokens() {
    let mut replica = Replica::new();
    let alice = replica.create_user("alice", "pw");
    let bob = replica.create_user("bob", "pw");
    let token = replica.create_token(alice, "ci", 0);
    let again = MetadataOp::CreatePersonalAccessToken {
        user_id: alice,
        name: "ci".into(),
        expiry_micros: 0,
    };
    assert_eq!(replica.apply(again), MetadataReply::NameAlreadyExists);
    let bobs = replica.create_token(bob, "ci", 0);
    assert_ne!(token, bobs);
    let missing_user = MetadataOp::CreatePersonalAccessToken {
        user_id: 99,
        name: "ci".into(),
        expiry_micros: 0,
    };
    assert_eq!(replica.apply(missing_user), MetadataReply::UserNotFound);
    replica.apply(MetadataOp::UpdateUser {
        user_id: alice,
        username: None,
        active: Some(false),
    });
    assert_eq!(
        replica.apply(MetadataOp::LoginWithPersonalAccessToken { token }),
        MetadataReply::UserInactive
    );
}
