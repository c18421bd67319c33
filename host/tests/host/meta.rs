//! Meta over the network, a host and its clients over in-memory links: key sets and panels across status and map changes, personal lines, chat commands, the game's form.

use std::time::Duration;

use serde_json::{Value, json};
use vimp_host::engine::auth::AuthForm;
use vimp_host::engine::map::MapConfig;
use vimp_host::engine::players::Participants;
use vimp_host::prelude::*;
use vimp_netcode::input::KeyAction;
use vimp_netcode::meta::{self, AuthData, AuthParam, Keyset, MetaMessage};
use vimp_netcode::session::{Hello, close};
use vimp_netcode::transport::Transport;

use super::network::Lan;

const SECOND: Duration = Duration::from_secs(1);

fn hello(name: &str) -> Hello {
    Hello::new(name, "test")
}

fn spectator(name: &str) -> Hello {
    Hello { spectator: true, ..hello(name) }
}

/// Every meta message client `i` got since the last look, decoded, in order.
fn meta_of(lan: &mut Lan, i: usize) -> Vec<MetaMessage> {
    let raw = lan.clients[i].take_meta();
    raw.iter().map(|(port, bytes)| MetaMessage::decode(*port, bytes).expect("the host sends valid meta")).collect()
}

/// The chat lines client `i` got so far, as JSON.
fn chat_of(lan: &Lan, i: usize) -> Vec<Value> {
    lan.clients[i].chat().to_vec()
}

fn player_id(lan: &Lan, i: usize) -> PlayerId {
    PlayerId(lan.clients[i].welcome().expect("welcomed").player_id)
}

fn plays(lan: &Lan, i: usize) -> bool {
    let id = player_id(lan, i);
    lan.server.host().world().resource::<Participants>().0.contains_key(&id)
}

fn welcomed(lan: &mut Lan) {
    assert!(lan.run_until(2 * SECOND, |l| l.clients.iter().all(|c| c.stats().snapshots > 0)), "everyone is in");
}

/// Where the first message that `is` holds for sits in `messages`.
fn at(messages: &[MetaMessage], is: impl Fn(&MetaMessage) -> bool) -> Option<usize> {
    messages.iter().position(is)
}

fn keyset(k: Keyset) -> impl Fn(&MetaMessage) -> bool {
    move |m| *m == MetaMessage::Keyset(k)
}

fn loading(m: &MetaMessage) -> bool {
    matches!(m, MetaMessage::TechInform(meta::TechInform::Show { code: meta::TechInform::LOADING, .. }))
}

fn hide(m: &MetaMessage) -> bool {
    *m == MetaMessage::TechInform(meta::TechInform::Hide)
}

fn clear_all(m: &MetaMessage) -> bool {
    *m == MetaMessage::Clear(meta::Clear::All)
}

fn map_data(m: &MetaMessage) -> bool {
    matches!(m, MetaMessage::Map(_))
}

/// The panels among `messages`, each as its `key` / `key:value` strings.
fn panels(messages: &[MetaMessage]) -> Vec<Vec<String>> {
    messages
        .iter()
        .filter_map(|m| match m {
            MetaMessage::Panel(p) => {
                Some(serde_json::from_slice(&MetaMessage::Panel(p.clone()).encode()).expect("json"))
            }
            _ => None,
        })
        .collect()
}

/// The arena map, to change to.
fn arena() -> MapConfig {
    MapConfig::from_json("default", super::DEFAULT).expect("map")
}

#[test]
fn a_join_and_a_seat_taken_back_get_the_map_between_loading_and_hide() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    welcomed(&mut lan);
    let first = meta_of(&mut lan, a);
    let (load, map, shown) = (at(&first, loading), at(&first, map_data), at(&first, hide));
    assert!(
        load.is_some() && load < map && map < shown,
        "a first join loads its map behind the black screen: {first:?}"
    );
    let token = lan.clients[a].welcome().map(|w| w.token).expect("welcome");
    lan.clients[a].transport_mut().disconnect(super::network::HOST);
    lan.run(SECOND, Some(&[]));
    let back = lan.join(Hello { resume_token: Some(token), ..hello("ann") });
    assert!(lan.run_until(2 * SECOND, |l| l.clients[back].welcome().is_some_and(|w| w.resumed)));
    lan.run(SECOND / 5, None);
    let got = meta_of(&mut lan, back);
    let (load, map, keys, shown) =
        (at(&got, loading), at(&got, map_data), at(&got, keyset(Keyset::Player)), at(&got, hide));
    assert!(load.is_some() && load < map && map < keys && keys < shown, "{got:?}");
}

#[test]
fn a_spectator_gets_its_keyset_right_before_clear_and_an_empty_panel_across_a_map_change() {
    let mut lan = Lan::with_maps(None, vec![arena()]);
    let a = lan.join(hello("ann"));
    let s = lan.join(spectator("eve"));
    welcomed(&mut lan);
    lan.run(SECOND, None);
    let before = meta_of(&mut lan, s);
    let eve_panels = panels(&before);
    assert!(!eve_panels.is_empty(), "a spectator gets a panel: {before:?}");
    let first = &eve_panels[0];
    assert!(first[0].starts_with("t:"), "the time first: {first:?}");
    for key in ["h", "w1", "w2", "wa"] {
        assert!(first.contains(&key.to_owned()), "{key} without a value: {first:?}");
    }
    assert!(eve_panels.iter().flatten().all(|e| e.starts_with("t:") || !e.contains(':')), "{eve_panels:?}");
    meta_of(&mut lan, a);

    lan.server.host_mut().load_map(arena()).expect("the arena loads");
    lan.run(SECOND / 2, None);
    let eve = meta_of(&mut lan, s);
    let (keys, load, clear, map, shown) = (
        at(&eve, keyset(Keyset::Spectator)),
        at(&eve, loading),
        at(&eve, clear_all),
        at(&eve, map_data),
        at(&eve, hide),
    );
    assert!(keys.is_some() && keys.map(|k| k + 2) == clear, "KEYSET 0, loading, CLEAR: {eve:?}");
    assert!(load < clear && clear < map && map < shown, "{eve:?}");
    assert_eq!(at(&eve, keyset(Keyset::Player)), None, "eve never gets the player's keys");
    let after = panels(&eve[clear.expect("clear")..]);
    assert!(after.first().is_some_and(|p| p[0].starts_with("t:") && p.contains(&"h".to_owned())), "{after:?}");
    assert!(after.iter().flatten().all(|e| e.starts_with("t:") || !e.contains(':')), "nothing but the time: {after:?}");

    let ann = meta_of(&mut lan, a);
    let (load, clear, map, keys, shown) =
        (at(&ann, loading), at(&ann, clear_all), at(&ann, map_data), at(&ann, keyset(Keyset::Player)), at(&ann, hide));
    assert!(load.is_some() && load < clear && clear < map && map < keys && keys < shown, "{ann:?}");
    assert_eq!(at(&ann, keyset(Keyset::Spectator)), None);
    let ann_panels = panels(&ann[shown.expect("hide")..]);
    assert!(ann_panels.first().is_some_and(|p| p.iter().any(|e| e.starts_with("h:"))), "a whole panel: {ann_panels:?}");
}

#[test]
fn the_same_map_again_clears_only_its_set_and_sends_no_map() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    welcomed(&mut lan);
    meta_of(&mut lan, a);
    // A new round on the same map: only the crates start over.
    let map = lan.server.host().world().resource::<vimp_host::engine::map::state::MapState>().config.clone();
    lan.server.host_mut().load_map(map.expect("a map")).expect("reload");
    lan.run(SECOND / 2, None);
    let got = meta_of(&mut lan, a);
    assert!(got.contains(&MetaMessage::Clear(meta::Clear::Set("c1".into()))), "the map's set: {got:?}");
    assert!(!got.iter().any(|m| clear_all(m) || map_data(m) || loading(m)), "{got:?}");
}

#[test]
fn spectate_and_play_switch_the_keyset_the_keys_and_the_tank() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    let b = lan.join(hello("bob"));
    welcomed(&mut lan);
    meta_of(&mut lan, a);
    assert!(plays(&lan, a));

    lan.clients[a].say("/spectate");
    assert!(lan.run_until(SECOND, |l| l.clients[a].key_table().is_some_and(|k| k.lookup("nextPlayer").is_some())));
    lan.run(SECOND / 5, None);
    assert!(!plays(&lan, a), "ann's tank left the game");
    assert!(lan.server.is_watching(player_id(&lan, a)));
    assert!(meta_of(&mut lan, a).contains(&MetaMessage::Keyset(Keyset::Spectator)));
    assert!(lan.clients[a].key(KeyAction::Down, "forward").is_none(), "a spectator has no forward");
    assert!(chat_of(&lan, b).contains(&json!("s:4:ann")), "everyone hears it");
    lan.clients[a].say("/spectate");
    assert!(lan.run_until(SECOND, |l| chat_of(l, a).contains(&json!("c:5"))), "watching already");
    assert!(!chat_of(&lan, b).contains(&json!("c:5")), "told to ann only");

    lan.clients[a].say("/PLAY");
    assert!(lan.run_until(SECOND, |l| plays(l, a)), "ann's tank is back");
    lan.run(SECOND / 5, None);
    assert!(meta_of(&mut lan, a).contains(&MetaMessage::Keyset(Keyset::Player)));
    assert!(chat_of(&lan, b).contains(&json!("s:5:ann")));
    let seq = lan.clients[a].key(KeyAction::Down, "forward").expect("the game's keys again");
    let id = player_id(&lan, a);
    let applied = |l: &Lan| {
        l.server.host().world().resource::<Participants>().0.get(&id).is_some_and(|p| p.keys.last_input_seq() >= seq)
    };
    assert!(lan.run_until(SECOND, applied), "ann drives again");
    lan.clients[a].say("/play");
    assert!(lan.run_until(SECOND, |l| chat_of(l, a).contains(&json!("c:6"))), "playing already");
}

#[test]
fn a_seat_taken_back_keeps_watching_whatever_its_hello_says() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    welcomed(&mut lan);
    lan.clients[a].say("/spectate");
    assert!(lan.run_until(SECOND, |l| !plays(l, a) && l.server.is_watching(player_id(l, a))));
    let token = lan.clients[a].welcome().map(|w| w.token).expect("welcome");
    lan.clients[a].transport_mut().disconnect(super::network::HOST);
    lan.run(SECOND, Some(&[]));
    let back = lan.join(Hello { resume_token: Some(token), ..hello("ann") });
    assert!(lan.run_until(2 * SECOND, |l| l.clients[back].welcome().is_some_and(|w| w.resumed)));
    lan.run(SECOND / 5, None);
    assert!(lan.clients[back].welcome().is_some_and(|w| w.spectator), "the welcome says so");
    assert_eq!(lan.clients[back].keyset(), Some(Keyset::Spectator));
    assert!(!plays(&lan, back), "no tank for a seat that watches");
}

#[test]
fn a_personal_line_reaches_one_player_only() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    let b = lan.join(hello("Bob K"));
    let c = lan.join(hello("cy"));
    welcomed(&mut lan);
    let team = lan.server.host().world().resource::<Participants>().0[&player_id(&lan, a)].team;
    lan.clients[a].say("/w bob k  meet me at the gate");
    let line = json!(["meet me at the gate", "ann", team, "Bob K"]);
    assert!(lan.run_until(SECOND, |l| chat_of(l, b).contains(&line)), "bob gets it, his name as shown");
    assert!(lan.run_until(SECOND, |l| chat_of(l, a).contains(&line)), "ann sees what she said");
    lan.clients[c].say("done");
    assert!(lan.run_until(SECOND, |l| chat_of(l, c).iter().any(|l| l[0] == "done")));
    let leaked = |l: &Lan, i: usize| chat_of(l, i).iter().any(|l| l[0] == "meet me at the gate");
    assert!(!leaked(&lan, c), "cy hears nothing of it: {:?}", chat_of(&lan, c));

    // Nor does anyone who comes back later: personal lines are not kept in the recent chat.
    let token = lan.clients[c].welcome().map(|w| w.token).expect("welcome");
    lan.clients[c].transport_mut().disconnect(super::network::HOST);
    lan.run(SECOND, Some(&[a, b]));
    let back = lan.join(Hello { resume_token: Some(token), ..hello("cy") });
    assert!(lan.run_until(2 * SECOND, |l| l.clients[back].welcome().is_some_and(|w| w.resumed)));
    lan.run(SECOND / 2, None);
    assert!(chat_of(&lan, back).iter().any(|l| l[0] == "done"), "the history came");
    assert!(!leaked(&lan, back), "{:?}", chat_of(&lan, back));
}

#[test]
fn a_line_the_game_sends_one_player_reaches_that_player_only() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    let b = lan.join(hello("bob"));
    welcomed(&mut lan);
    let ann = player_id(&lan, a);
    let line = meta::ChatMessage::System { group: "b".into(), code: 9, params: vec!["secret".into()] };
    let world = lan.server.host_mut().world_mut();
    world.resource_mut::<vimp_host::engine::meta::MetaOutbox>().send_to(ann, line);
    assert!(lan.run_until(SECOND, |l| chat_of(l, a).contains(&json!("b:9:secret"))));
    lan.run(SECOND / 5, None);
    assert!(!chat_of(&lan, b).contains(&json!("b:9:secret")), "{:?}", chat_of(&lan, b));
}

/// A message of the game's that the wire cannot carry (a chat group with a space) is a game
/// bug: the host sends it to nobody and counts it; the next one goes.
#[test]
fn a_message_the_game_sends_that_does_not_validate_goes_to_nobody_and_is_counted() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    welcomed(&mut lan);
    let bad = meta::ChatMessage::System { group: "b b".into(), code: 9, params: vec!["bad".into()] };
    let good = meta::ChatMessage::System { group: "b".into(), code: 9, params: vec!["good".into()] };
    let world = lan.server.host_mut().world_mut();
    let mut outbox = world.resource_mut::<vimp_host::engine::meta::MetaOutbox>();
    outbox.broadcast(bad);
    outbox.broadcast(good);
    assert!(lan.run_until(SECOND, |l| chat_of(l, a).contains(&json!("b:9:good"))));
    assert!(!chat_of(&lan, a).iter().any(|l| l.as_str().is_some_and(|l| l.contains("bad"))), "{:?}", chat_of(&lan, a));
    assert_eq!(lan.server.stats().meta_refused, 1);
}

#[test]
fn a_personal_line_to_nobody_or_to_oneself_is_an_error_to_the_sender_only() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("ann"));
    let b = lan.join(hello("bob"));
    welcomed(&mut lan);
    lan.clients[a].say("/w zed hello?");
    lan.clients[a].say("/w ANN hi me");
    lan.clients[a].say("/w bob");
    lan.clients[a].say("/kick bob");
    lan.clients[a].say("/help");
    let answers = [json!("c:1:zed"), json!("c:7"), json!("c:3:w name text"), json!("c:2:kick")];
    assert!(lan.run_until(SECOND, |l| answers.iter().all(|x| chat_of(l, a).contains(x))), "{:?}", chat_of(&lan, a));
    let help = chat_of(&lan, a).into_iter().find(|l| l.as_str().is_some_and(|s| s.starts_with("c:4:")));
    let help = help.expect("the commands").as_str().map(str::to_owned).unwrap_or_default();
    for command in ["w name text", "spectate", "play", "help"] {
        assert!(help.split([':', ',']).any(|c| c == command), "{command} in {help}");
    }
    lan.run(SECOND / 5, None);
    assert!(
        !chat_of(&lan, b).iter().any(|l| l.as_str().is_some_and(|s| s.starts_with("c:"))),
        "{:?}",
        chat_of(&lan, b)
    );
    assert!(!chat_of(&lan, b).iter().any(|l| l[0] == "hello?" || l[0] == "hi me"));
    assert!(lan.clients.iter().all(|c| c.closed().is_none()), "errors are no reason to close");
}

#[test]
fn personal_lines_count_against_the_chat_rate_limit() {
    let mut lan = Lan::new(None);
    let a = lan.join(hello("loud"));
    let b = lan.join(hello("bob"));
    welcomed(&mut lan);
    for i in 0..40 {
        lan.clients[a].say(&format!("/w bob spam {i}"));
    }
    lan.run(SECOND / 3, None);
    assert_eq!(lan.clients[a].closed().map(|c| c.0), Some(close::RATE));
    let got = chat_of(&lan, b).iter().filter(|l| l[0].as_str().is_some_and(|t| t.starts_with("spam"))).count();
    assert!(got < 40, "the bucket held most of them back: {got}");
}

/// A form of two fields: a required `motto` of at most 8 characters, and a `model` of two choices.
fn form() -> AuthForm {
    AuthForm {
        data: AuthData {
            elems: json!({ "authId": "auth", "fieldsId": "fields" }),
            params: vec![
                AuthParam {
                    name: "motto".into(),
                    value: json!(""),
                    options: json!({ "required": true, "maxlength": 8 }),
                },
                AuthParam {
                    name: "model".into(),
                    value: json!("light"),
                    options: json!({ "options": ["light", "heavy"] }),
                },
            ],
            texts: None,
        },
        validators: Default::default(),
    }
}

#[test]
fn a_game_form_keeps_a_player_watching_until_its_answer_passes() {
    let mut lan = Lan::new(None);
    lan.server.host_mut().world_mut().insert_resource(form());
    let a = lan.join(hello("ann"));
    let b = lan.join(spectator("eve"));
    welcomed(&mut lan);
    lan.run(SECOND / 5, None);
    let got = meta_of(&mut lan, a);
    assert!(got.contains(&MetaMessage::AuthData(form().data)), "the form: {got:?}");
    assert!(got.contains(&MetaMessage::Keyset(Keyset::Spectator)), "ann watches while she fills it in");
    assert!(!plays(&lan, a));
    assert!(!meta_of(&mut lan, b).iter().any(|m| matches!(m, MetaMessage::AuthData(_))), "a spectator is not asked");

    lan.clients[a].send_meta(meta::AUTH_RESPONSE, br#"{"motto": "far too long", "model": "tiny", "hat": 1}"#);
    lan.run(SECOND / 5, None);
    let errors = meta_of(&mut lan, a).into_iter().find_map(|m| match m {
        MetaMessage::AuthResult(meta::AuthResult::Rejected(errors)) => Some(errors),
        _ => None,
    });
    let fields: Vec<String> = errors.expect("an error per field").into_keys().collect();
    assert_eq!(fields, ["hat", "model", "motto"]);
    assert!(!plays(&lan, a), "still watching");

    lan.clients[a].send_meta(meta::AUTH_RESPONSE, br#"{"motto": "gg", "model": "heavy", "token": "jwt"}"#);
    assert!(lan.run_until(SECOND, |l| plays(l, a)), "in the game");
    lan.run(SECOND / 5, None);
    let got = meta_of(&mut lan, a);
    let (result, keys) =
        (at(&got, |m| *m == MetaMessage::AuthResult(meta::AuthResult::Accepted)), at(&got, keyset(Keyset::Player)));
    assert!(result.is_some() && result < keys, "null, then the player's keys: {got:?}");
    let values = lan.server.auth_values(player_id(&lan, a)).cloned().map(Value::Object);
    assert_eq!(values, Some(json!({ "motto": "gg", "model": "heavy" })));

    // The spectator may answer too: that is /play with the form.
    lan.clients[b].say("/play");
    lan.run(SECOND / 5, None);
    assert!(meta_of(&mut lan, b).contains(&MetaMessage::AuthData(form().data)), "/play asks for the form");
    lan.clients[b].send_meta(meta::AUTH_RESPONSE, br#"{"motto": "hi"}"#);
    assert!(lan.run_until(SECOND, |l| plays(l, b)));
    // Bytes that are no answer at all close their sender.
    lan.clients[a].send_meta(meta::AUTH_RESPONSE, b"[1, 2]");
    assert!(lan.run_until(SECOND, |l| l.clients[a].closed().is_some()));
    assert_eq!(lan.clients[a].closed().map(|c| c.0), Some(close::PROTOCOL));
    assert!(lan.clients[b].closed().is_none());
}

#[test]
fn a_rendezvous_token_verifies_its_player_under_its_name_and_a_bad_one_is_refused_with_why() {
    use vimp_host::engine::roster::Identities;
    use vimp_netcode::identity::{Identity, TokenKeys, TokenSigner, unix_now};
    let rendezvous = TokenSigner::new("rdv", &Identity::from_seed([1; 32]));
    let mut lan = Lan::new(None);
    let keys = TokenKeys { issuer: "rdv".into(), jwks: rendezvous.jwks() };
    lan.server.set_identities(Some(&Identities { keys, room: "K7MP2Q".into() }));
    let squatter = lan.join(hello("alice"));
    let alice = lan.join(hello("al"));
    welcomed(&mut lan);
    let token = |nick: &str, room: &str| {
        let key = Identity::from_seed([2; 32]).public_key();
        json!({ "token": rendezvous.issue(&key, nick, room, unix_now(), 60) }).to_string()
    };
    lan.clients[alice].send_meta(meta::AUTH_RESPONSE, token("Alice", "K7MP2Q").as_bytes());
    assert!(lan.run_until(SECOND, |l| chat_of(l, squatter).contains(&json!("s:6:Alice,al"))), "everyone hears it");
    assert!(chat_of(&lan, alice).contains(&json!("s:7:alice,alice (2)")), "{:?}", chat_of(&lan, alice));
    let seat = |lan: &Lan, i: usize| lan.server.roster().seat(player_id(lan, i)).cloned().expect("a seat");
    assert_eq!((seat(&lan, alice).nickname, seat(&lan, alice).verified.is_some()), ("Alice".to_owned(), true));
    assert_eq!((seat(&lan, squatter).nickname, seat(&lan, squatter).verified), ("alice (2)".to_owned(), None));
    let names = |lan: &Lan| {
        let participants = lan.server.host().world().resource::<Participants>().0.clone();
        participants.values().map(|p| p.name.clone()).collect::<Vec<_>>()
    };
    assert!(
        lan.run_until(SECOND, |l| names(l).contains(&"Alice".to_owned())),
        "the game's name too: {:?}",
        names(&lan)
    );
    assert!(names(&lan).contains(&"alice (2)".to_owned()));
    let got = meta_of(&mut lan, alice);
    assert!(got.contains(&MetaMessage::AuthResult(meta::AuthResult::Accepted)));
    // Everyone hears who is verified (ACCOLADES_DATA, by player id), with the places the host
    // was told.
    let accolades = |got: &[MetaMessage]| {
        got.iter().rev().find_map(|m| match m {
            MetaMessage::Accolades(a) => Some(a.clone()),
            _ => None,
        })
    };
    let heard = accolades(&got).expect("accolades");
    let id = |lan: &Lan, i: usize| player_id(lan, i).0 as u32;
    assert_eq!(heard.of(id(&lan, alice)).map(|a| (a.verified, a.place)), Some((true, None)));
    assert_eq!(heard.of(id(&lan, squatter)).map(|a| a.verified), Some(false));
    let key = seat(&lan, alice).verified.expect("a key");
    assert_eq!(lan.server.verified_keys(), std::slice::from_ref(&key));
    lan.server.set_places([(key, 7)].into_iter().collect());
    lan.run(SECOND, None);
    let heard = accolades(&meta_of(&mut lan, squatter)).expect("accolades again");
    assert_eq!(heard.of(id(&lan, alice)).and_then(|a| a.place), Some(7));

    // A token for another room, and garbage: refused, said to their sender alone, with why.
    lan.clients[squatter].send_meta(meta::AUTH_RESPONSE, token("Alice", "OTHER2").as_bytes());
    assert!(
        lan.run_until(SECOND, |l| chat_of(l, squatter)
            .iter()
            .any(|l| l.as_str().is_some_and(|l| l.starts_with("c:8:"))))
    );
    lan.run(SECOND / 5, None);
    let refused = meta_of(&mut lan, squatter).into_iter().find_map(|m| match m {
        MetaMessage::AuthResult(meta::AuthResult::Rejected(errors)) => errors.get("token").cloned(),
        _ => None,
    });
    assert_eq!(refused.as_deref(), Some("the token is for another room"));
    assert!(!chat_of(&lan, alice).iter().any(|l| l.as_str().is_some_and(|l| l.starts_with("c:8:"))));
    assert_eq!(seat(&lan, squatter).verified, None);
    lan.clients[squatter].send_meta(meta::AUTH_RESPONSE, br#"{"token": "not.a.jwt"}"#);
    lan.run(SECOND / 5, None);
    assert!(lan.clients[squatter].closed().is_none(), "a bad token is no protocol error");
    assert_eq!(seat(&lan, alice).nickname, "Alice");
}

#[test]
fn without_a_form_an_answer_changes_nothing() {
    let mut lan = Lan::new(None);
    let s = lan.join(spectator("eve"));
    welcomed(&mut lan);
    lan.clients[s].send_meta(meta::AUTH_RESPONSE, br#"{"motto": "gg"}"#);
    lan.run(SECOND / 2, None);
    assert!(!plays(&lan, s), "tanks have no form: /play is the way in");
    assert!(!meta_of(&mut lan, s).iter().any(|m| matches!(m, MetaMessage::AuthResult(_))));
}

/// At a round's end, a host that checks tokens tells every client the round's results, and
/// each verified player finds them the same as its own scoreboard: the copies its process
/// signs are the same bytes. An unverified player has nothing to sign.
#[test]
fn a_round_end_gives_every_verified_player_the_same_results_to_sign() {
    use vimp_host::engine::roster::Identities;
    use vimp_netcode::identity::{Identity, TokenKeys, TokenSigner, unix_now};
    let rendezvous = TokenSigner::new("rdv", &Identity::from_seed([1; 32]));
    let mut lan = super::network::Lan::with_setup(None, Vec::new(), super::SMALL, 1, |config| {
        config.game["rounds"] = json!({ "roundSeconds": 3, "intermissionSeconds": 1 });
    });
    let keys = TokenKeys { issuer: "rdv".into(), jwks: rendezvous.jwks() };
    lan.server.set_identities(Some(&Identities { keys, room: "K7MP2Q".into() }));
    let (alice, bob, carol) = (lan.join(hello("alice")), lan.join(hello("bob")), lan.join(hello("carol")));
    welcomed(&mut lan);
    for (i, seed, name) in [(alice, 2, "Alice"), (bob, 3, "Bob")] {
        let key = Identity::from_seed([seed; 32]).public_key();
        let token = json!({ "token": rendezvous.issue(&key, name, "K7MP2Q", unix_now(), 60) }).to_string();
        lan.clients[i].send_meta(meta::AUTH_RESPONSE, token.as_bytes());
        lan.clients[i].set_identity_key(Some(key.to_string()));
    }
    // Carol's token is another room's: refused, she plays unverified and signs nothing.
    let key = Identity::from_seed([4; 32]).public_key();
    let token = json!({ "token": rendezvous.issue(&key, "Carol", "H7MP3R", unix_now(), 60) }).to_string();
    lan.clients[carol].send_meta(meta::AUTH_RESPONSE, token.as_bytes());
    lan.clients[carol].set_identity_key(Some(key.to_string()));
    let verified = |lan: &Lan| lan.server.verified_keys().len() == 2;
    assert!(lan.run_until(SECOND, verified), "both tokens hold");
    assert!(lan.run_until(5 * SECOND, |l| l.server.rounds_ended() > 0), "the round ends");
    lan.run(SECOND / 2, None);
    let a = lan.clients[alice].take_round().expect("alice heard the round's end").expect("and agrees");
    let b = lan.clients[bob].take_round().expect("bob heard it").expect("and agrees");
    assert_eq!(a.signed_text(), b.signed_text(), "both sign the same bytes");
    assert_eq!(a.room, "K7MP2Q");
    assert!(a.check().is_ok());
    assert_eq!(a.verified().count(), 2, "{a:?}");
    // Every player of the match is listed (the bot and carol unverified), none twice.
    let participants = lan.server.host().world().resource::<Participants>().0.len();
    assert_eq!(a.players.len(), participants);
    assert!(chat_of(&lan, carol).iter().any(|l| l.as_str().is_some_and(|l| l.starts_with("c:8:"))));
    assert!(lan.clients[carol].take_round().is_none(), "an unverified player signs nothing");
}

#[test]
fn every_player_hears_where_the_room_is_and_a_newcomer_hears_it_at_its_welcome() {
    use vimp_netcode::lobby::Invite;
    let mut lan = Lan::new(None);
    let early = lan.join(hello("early"));
    welcomed(&mut lan);
    assert!(lan.clients[early].room().is_none(), "nothing said yet");
    // The host serves its room and its router opened it: every player hears the invite.
    let lan_only = Invite { public: None, lan: Some("ws://192.168.1.10:3536/K7MP2Q".into()), served: true };
    lan.server.set_room(Some(lan_only.clone()));
    let host = lan.clients[early].host_peer().expect("a host");
    assert!(lan.run_until(SECOND, |l| l.clients[early].room() == Some((host, &lan_only))));
    let opened = Invite { public: Some("ws://45.0.113.21:3536/K7MP2Q".into()), ..lan_only };
    lan.server.set_room(Some(opened.clone()));
    assert!(lan.run_until(SECOND, |l| l.clients[early].room() == Some((host, &opened))), "the change too");
    // A newcomer hears it with its welcome.
    let late = lan.join(hello("late"));
    welcomed(&mut lan);
    assert!(lan.run_until(SECOND, |l| l.clients[late].room() == Some((host, &opened))));
}
