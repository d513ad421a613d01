//! The tools rounds ships with (`task`, the tenth, is `delegate`'s). Each file is one tool: its typed input (the schema is
//! derived from it), its name, class, subject field and description, and its work, as a
//! [`typed::BuiltinTool`]; [`typed::Typed`] makes it a `Tool` (spec, decoding, subject, the
//! blocking pool and path checks for file work). What the two web tools share is in `tools::web`.
//!
//! To add a built-in: write `NAME.rs` here implementing `BuiltinTool` and register it, wrapped
//! in `Typed`, in [`registry`].

use std::sync::Arc;

use super::Registry;
use typed::Typed;

pub(crate) mod bash;
pub(crate) mod edit_file;
pub(crate) mod glob;
pub(crate) mod grep;
pub(crate) mod list_dir;
pub(crate) mod read_file;
mod tally;
pub(crate) mod typed;
pub(crate) mod web_fetch;
pub(crate) mod web_search;
pub(crate) mod write_file;

/// Settings of the built-in tools that come from flags.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `web_search` endpoint template with `{query}`; `None` means the DuckDuckGo HTML page.
    pub search_url: Option<String>,
    /// Lets `web_fetch` reach loopback, private and link-local addresses.
    pub web_allow_private: bool,
    /// The agents `task` may name, besides `general`.
    pub agents: Vec<crate::delegate::AgentBrief>,
    /// The run's model takes images: `read_file` says it shows them.
    pub images: bool,
}

/// A registry holding the built-in tools, in the order they are offered.
pub(crate) fn registry(options: &Options) -> Registry {
    let mut registry = Registry::default();
    registry.register(Arc::new(Typed::new(read_file::ReadFile {
        images: options.images,
    })));
    registry.register(Arc::new(Typed::new(list_dir::ListDir)));
    registry.register(Arc::new(Typed::new(glob::Glob)));
    registry.register(Arc::new(Typed::new(grep::Grep)));
    registry.register(Arc::new(Typed::new(write_file::WriteFile)));
    registry.register(Arc::new(Typed::new(edit_file::EditFile)));
    registry.register(Arc::new(Typed::new(bash::Bash)));
    registry.register(Arc::new(Typed::new(
        web_fetch::WebFetch::new().allow_private(options.web_allow_private),
    )));
    registry.register(Arc::new(Typed::new(web_search::WebSearch::new(
        options.search_url.clone(),
    ))));
    registry.register(Arc::new(crate::delegate::Task::new(&options.agents)));
    registry
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_schema_compiles_and_names_are_unique() {
        let registry = registry(&Options::default());
        let names: Vec<&str> = registry.names().collect();
        assert_eq!(
            names,
            [
                "read_file",
                "list_dir",
                "glob",
                "grep",
                "write_file",
                "edit_file",
                "bash",
                "web_fetch",
                "web_search",
                "task"
            ]
        );
        for name in names {
            let entry = registry.get(name).unwrap();
            let v = entry.validator().unwrap();
            assert!(!v.is_valid(&serde_json::json!("not an object")), "{name}");
        }
    }
}
