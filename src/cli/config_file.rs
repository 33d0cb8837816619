//! `freight serve --config freight.toml`: settings from a file, under the
//! environment and the command line.
//!
//! Precedence, highest first: command-line flags, `FREIGHT_*` environment
//! variables, the config file, built-in defaults. The file's keys are the long
//! flag names (`listen`, `data-dir` or `data_dir`, ...); a switch such as
//! `webhooks-allow-http` takes `true` or `false`. The file is turned into the
//! flags it stands for and parsed by the same parser, so it is validated exactly
//! like the command line.

use std::ffi::OsString;
use std::path::Path;

use anyhow::{Context, anyhow, bail};
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Command};

/// Flags for the file's settings that neither a flag nor the environment set,
/// to be appended to the `serve` command line.
pub fn flags_from_file(
    path: &Path,
    serve: &Command,
    given: &ArgMatches,
) -> anyhow::Result<Vec<OsString>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the config file {}", path.display()))?;
    let table: toml::Table = text
        .parse()
        .with_context(|| format!("{} is not valid TOML", path.display()))?;
    let mut flags = Vec::new();
    for (key, value) in table {
        let id = key.replace('-', "_");
        let Some(arg) = serve
            .get_arguments()
            .find(|a| a.get_id().as_str() == id && a.get_long().is_some() && id != "config")
        else {
            let known: Vec<String> = serve
                .get_arguments()
                .filter_map(|a| a.get_long().map(str::to_owned))
                .filter(|l| l != "config" && l != "help" && l != "version")
                .collect();
            bail!(
                "{}: unknown setting `{key}`; known settings: {}",
                path.display(),
                known.join(", ")
            );
        };
        let source = given.value_source(&id);
        if matches!(
            source,
            Some(ValueSource::CommandLine | ValueSource::EnvVariable)
        ) {
            continue;
        }
        let long = format!("--{}", arg.get_long().expect("filtered on long flags"));
        let switch = matches!(arg.get_action(), ArgAction::SetTrue);
        match value {
            toml::Value::Boolean(on) if switch => {
                if on {
                    flags.push(OsString::from(long));
                }
            }
            toml::Value::String(s) if !switch => flags.extend([long.into(), s.into()]),
            toml::Value::Integer(n) if !switch => {
                flags.extend([long.into(), n.to_string().into()]);
            }
            other => {
                return Err(anyhow!(
                    "{}: `{key}` must be {}, not {}",
                    path.display(),
                    if switch {
                        "true or false"
                    } else {
                        "a string or a number"
                    },
                    other.type_str()
                ));
            }
        }
    }
    Ok(flags)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::*;
    use crate::cli::Cli;

    fn serve_matches(args: &[&str]) -> (Command, ArgMatches) {
        let cli = Cli::command();
        let matches = cli.clone().get_matches_from(args);
        let serve = cli.find_subcommand("serve").unwrap().clone();
        let sub = matches.subcommand_matches("serve").unwrap().clone();
        (serve, sub)
    }

    fn file(text: &str) -> tempfile::NamedTempFile {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), text).unwrap();
        file
    }

    #[test]
    fn the_file_fills_in_what_flags_leave_unset() {
        let config = file(
            "listen = \"0.0.0.0:9443\"\nactor-idle-secs = 60\nwebhooks_allow_http = true\nno-bootstrap-key = false\n",
        );
        let (serve, given) = serve_matches(&["freight", "serve", "--listen", "127.0.0.1:1"]);
        let flags = flags_from_file(config.path(), &serve, &given).unwrap();
        // `listen` came from the command line, which wins; a false switch adds nothing.
        assert_eq!(
            flags,
            ["--actor-idle-secs", "60", "--webhooks-allow-http"]
                .map(OsString::from)
                .to_vec()
        );
    }

    #[test]
    fn mistakes_in_the_file_are_named() {
        let (serve, given) = serve_matches(&["freight", "serve"]);
        let unknown = flags_from_file(file("listne = \"x\"").path(), &serve, &given).unwrap_err();
        assert!(
            unknown.to_string().contains("unknown setting `listne`"),
            "{unknown}"
        );
        let wrong = flags_from_file(file("webhooks-allow-http = \"yes\"").path(), &serve, &given)
            .unwrap_err();
        assert!(wrong.to_string().contains("true or false"), "{wrong}");
        let broken = flags_from_file(file("listen = ").path(), &serve, &given).unwrap_err();
        assert!(broken.to_string().contains("not valid TOML"), "{broken}");
    }
}
