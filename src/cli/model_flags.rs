//! The `--<provider>-model` flags, one per provider whose descriptor has
//! one, built from the catalog at run time (clap's derive cannot list
//! them): adding a provider adds its flag.

use std::collections::BTreeMap;

use clap::Args;

use crate::catalog::Provider;

/// The worker model flags of the providers that have one
/// ([`crate::providers::Descriptor::model_flag`]), built from the catalog:
/// each provider's model, as given.
#[derive(Debug, Default, Clone)]
pub struct ProviderModels(BTreeMap<Provider, String>);

impl ProviderModels {
    /// The model `provider`'s flag gave, if it has a flag and it was given.
    pub fn get(&self, provider: Provider) -> Option<&str> {
        self.0.get(&provider).map(String::as_str)
    }

    /// Set (or, with `None`, clear) `provider`'s model, as its flag would.
    pub fn set(&mut self, provider: Provider, model: Option<String>) {
        match model {
            Some(model) => self.0.insert(provider, model),
            None => self.0.remove(&provider),
        };
    }

    /// Each provider with a model flag, and the flag's long name.
    pub fn flags() -> impl Iterator<Item = (Provider, &'static str)> {
        Provider::ALL
            .iter()
            .filter_map(|provider| Some((*provider, provider.descriptor().model_flag?)))
    }
}

impl clap::FromArgMatches for ProviderModels {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut models = ProviderModels::default();
        models.update_from_arg_matches(matches)?;
        Ok(models)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        for (provider, flag) in ProviderModels::flags() {
            if matches.contains_id(flag) {
                self.set(provider, matches.get_one::<String>(flag).cloned());
            }
        }
        Ok(())
    }
}

impl Args for ProviderModels {
    fn augment_args(command: clap::Command) -> clap::Command {
        ProviderModels::flags().fold(command, |command, (provider, flag)| {
            let default = provider.default_model(crate::catalog::Role::Analyser);
            let help = match provider.model_env() {
                Some(env) => format!("[default: {env}, else {default}]"),
                None => format!("[default: {default}]"),
            };
            command.arg(
                clap::Arg::new(flag)
                    .long(flag)
                    .value_name("MODEL")
                    .action(clap::ArgAction::Set)
                    .value_parser(clap::value_parser!(String))
                    .help(format!("{} worker model. {help}", provider.title())),
            )
        })
    }

    fn augment_args_for_update(command: clap::Command) -> clap::Command {
        ProviderModels::augment_args(command)
    }
}
