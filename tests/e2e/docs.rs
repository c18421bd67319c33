//! The docs a user reads, held to the code: the command reference (`docs/cli.md`) against
//! `--help` and `vimp sim --json`, and lines short enough to review.

use std::collections::BTreeSet;

use crate::{repo, vimp};

/// The long flags a `--help` text lists (`--help` aside).
fn help_flags(help: &str) -> BTreeSet<String> {
    help.lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let line = line.strip_prefix("-h, ").or_else(|| line.strip_prefix("-V, ")).unwrap_or(line);
            let name = flag_name(line.strip_prefix("--")?);
            (!name.is_empty() && name != "help").then_some(name)
        })
        .collect()
}

/// The name at the start of `rest`, what follows a `--`.
fn flag_name(rest: &str) -> String {
    rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-').collect()
}

/// Every `--flag` named in `text`.
fn flags_in(text: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    for (at, _) in text.match_indices("--") {
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-') {
            continue;
        }
        let name = flag_name(&text[at + 2..]);
        if name.starts_with(|c: char| c.is_ascii_lowercase()) {
            flags.insert(name);
        }
    }
    flags
}

/// The subcommands a `--help` text lists (`help` aside).
fn help_commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The command lines a user can run and their `--help`: `vimp` itself and every subcommand
/// with none of its own (`vimp play`, …, `vimp map check`).
fn commands(path: Vec<String>, found: &mut Vec<(String, String)>) {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let out = vimp(&args);
    assert!(out.status.success(), "vimp {args:?} exits 0");
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    let subcommands = help_commands(&help);
    if path.is_empty() || subcommands.is_empty() {
        let name = std::iter::once("vimp").chain(path.iter().map(String::as_str)).collect::<Vec<_>>().join(" ");
        found.push((name, help));
    }
    for sub in subcommands {
        let mut longer = path.clone();
        longer.push(sub);
        commands(longer, found);
    }
}

/// `docs/cli.md`'s sections, one per command (`## `vimp play``): the command and its text.
fn reference_sections(reference: &str) -> Vec<(String, String)> {
    let mut sections: Vec<(String, String)> = Vec::new();
    let mut current: Option<(String, String)> = None;
    for line in reference.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            sections.extend(current.take());
            current = heading
                .strip_prefix('`')
                .and_then(|h| h.strip_suffix('`'))
                .filter(|h| h.starts_with("vimp"))
                .map(|command| (command.to_owned(), String::new()));
        } else if let Some((_, text)) = current.as_mut() {
            text.push_str(line);
            text.push('\n');
        }
    }
    sections.extend(current);
    sections
}

/// The flags a section's list gives an item of their own: `- `--flag VALUE`, `--other`: …`.
fn listed_flags(section: &str) -> BTreeSet<String> {
    section
        .lines()
        .filter(|line| line.starts_with("- `--"))
        .flat_map(|line| flags_in(line.split_once("`:").map_or(line, |(head, _)| head)))
        .collect()
}

#[test]
fn the_command_reference_lists_exactly_the_flags_of_each_help() {
    let reference = std::fs::read_to_string(repo("docs/cli.md")).expect("docs/cli.md");
    let mut helps = Vec::new();
    commands(Vec::new(), &mut helps);
    let sections = reference_sections(&reference);

    let documented: Vec<&str> = sections.iter().map(|(c, _)| c.as_str()).collect();
    let existing: Vec<&str> = helps.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(documented, existing, "docs/cli.md has one section per command, in --help's order");

    let mut every_flag = BTreeSet::new();
    for ((command, section), (_, help)) in sections.iter().zip(&helps) {
        let (listed, flags) = (listed_flags(section), help_flags(help));
        let missing: Vec<_> = flags.difference(&listed).collect();
        let stale: Vec<_> = listed.difference(&flags).collect();
        assert!(
            missing.is_empty() && stale.is_empty(),
            "docs/cli.md's `{command}` lists every flag of its --help and no other: \
             missing {missing:?}, not in --help {stale:?}"
        );
        every_flag.extend(flags);
    }
    every_flag.insert("help".to_owned());
    let named = flags_in(&reference);
    let unknown: Vec<_> = named.difference(&every_flag).collect();
    assert!(unknown.is_empty(), "docs/cli.md names flags no command has: {unknown:?}");
}

#[test]
fn the_command_reference_names_every_figure_of_vimp_sim() {
    let reference = std::fs::read_to_string(repo("docs/cli.md")).expect("docs/cli.md");
    let (_, section) = reference_sections(&reference)
        .into_iter()
        .find(|(command, _)| command == "vimp sim")
        .expect("a section for vimp sim");
    let map = repo("maps/test-small.json");
    let out = vimp(&["sim", "--map", map.to_str().expect("utf-8 path"), "--bots", "2", "--seconds", "1", "--json"]);
    assert!(out.status.success(), "vimp sim: {}", String::from_utf8_lossy(&out.stderr));
    let figures: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON figures");
    let unnamed: Vec<&String> = figures
        .as_object()
        .expect("one JSON object")
        .keys()
        .filter(|key| !section.contains(&format!("`{key}`")))
        .collect();
    assert!(unnamed.is_empty(), "docs/cli.md's `vimp sim` names every figure it prints: not {unnamed:?}");
}

#[test]
fn no_line_of_the_readme_the_architecture_or_the_reference_is_over_300_characters() {
    for file in ["README.md", "ARCHITECTURE.md", "docs/cli.md"] {
        let text = std::fs::read_to_string(repo(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let long: Vec<(usize, usize)> = text
            .lines()
            .enumerate()
            .map(|(at, line)| (at + 1, line.chars().count()))
            .filter(|&(_, chars)| chars > 300)
            .collect();
        assert!(long.is_empty(), "{file}: lines over 300 characters (line, characters): {long:?}");
    }
}
