//! The flags that decide which tools exist and which the model may use (`--allow`, `--edit`,
//! `--mcp`, …): one `Args` struct, flattened into a run's flags and `rounds tools`'.

use std::path::PathBuf;

use clap::Args;

use super::positive_secs;

/// Which tools exist and which the model may use: shared by a run and `rounds tools`.
#[derive(Debug, Clone, Default, Args)]
pub struct ToolFlags {
    /// Allow tools: TOOL or TOOL(PATTERN), comma-separated, repeatable.
    ///
    /// Adds to the default (read_file, list_dir, glob, grep); "none" clears what came before, "all"
    /// allows every tool. PATTERN is a glob on the call's subject: the path for file tools
    /// (read_file(src/**)).
    #[arg(
        help_heading = "Tools & allowlist",
        short,
        long = "allow",
        value_name = "RULES"
    )]
    pub allow: Vec<String>,

    /// Deny tools or calls, same syntax as --allow.
    ///
    /// Deny wins over allow.
    #[arg(
        help_heading = "Tools & allowlist",
        long = "deny",
        value_name = "RULES"
    )]
    pub deny: Vec<String>,

    /// Let the model edit files in the workspace (write_file, edit_file).
    ///
    /// Adds to what --allow offers; --deny still wins. Your settings file may set it, a
    /// project's .rounds.toml may not.
    #[arg(help_heading = "Tools & allowlist", long)]
    pub edit: bool,

    /// Let the model edit files and run commands in the sandbox (--edit plus bash).
    ///
    /// bash runs in the --sandbox: workspace-write, no network, unless you say otherwise;
    /// --sandbox off is refused. Adds to what --allow offers; --deny still wins.
    #[arg(help_heading = "Tools & allowlist", long)]
    pub full_auto: bool,

    /// Pass this environment variable through to tool processes (repeatable).
    ///
    /// Tools get a scrubbed environment (PATH, HOME, LANG, … but no keys); provider keys are never
    /// passed.
    #[arg(
        help_heading = "Tools & allowlist",
        long = "tool-env",
        value_name = "NAME"
    )]
    pub tool_env: Vec<String>,

    /// Search endpoint for web_search, with {query} where the URL-encoded query goes.
    ///
    /// It may answer with a DuckDuckGo-style HTML page or JSON {"results":[{"title","url","snippet"}]}.
    /// [default: https://html.duckduckgo.com/html/?q={query}]
    #[arg(help_heading = "Tools & allowlist", long, value_name = "URL")]
    pub search_url: Option<String>,

    /// Let web_fetch reach loopback, private, link-local and other non-public addresses (off by
    /// default: a fetched page could talk the model into reading 169.254.169.254 or an internal
    /// admin port). Proxies set in HTTP(S)_PROXY/ALL_PROXY are always reachable.
    #[arg(help_heading = "Tools & allowlist", long)]
    pub web_allow_private: bool,

    /// The OS sandbox of every tool process (bash, command tools, hooks, MCP servers), on
    /// Linux with Landlock and seccomp: workspace-write lets them write only in the workspace
    /// and the temp dir, never a repository's .git, with no network and no access to other
    /// processes;
    /// read-only allows no writes; off removes it; require is workspace-write that must be
    /// fully enforced (exit 2 when the kernel cannot).
    #[arg(help_heading = "Sandbox", long, value_name = "MODE", default_value = "workspace-write",
          value_parser = clap::builder::PossibleValuesParser::new(crate::process::sandbox::FLAG_VALUES))]
    pub sandbox: String,

    /// Let tool processes also write below DIR (repeatable), e.g. a throwaway cache directory.
    ///
    /// Never a directory of programs or configuration something outside the sandbox runs later
    /// (~/.cargo, ~/.npm, ~/.local/bin): a tool could plant code there. PATH/.git lets tools
    /// write that repository's .git (git commit), and so plant a hook your next git runs.
    #[arg(help_heading = "Sandbox", long = "sandbox-write", value_name = "DIR")]
    pub sandbox_write: Vec<PathBuf>,

    /// Let bash and hooks use the network (command tools and MCP servers declare their own need
    /// with network = true in their entry).
    #[arg(help_heading = "Sandbox", long)]
    pub tool_network: bool,

    /// The directory file tools are confined to.
    ///
    /// [default: the current directory]
    #[arg(help_heading = "Tools & allowlist", short, long, value_name = "DIR")]
    pub workspace: Option<PathBuf>,

    /// Define subagents from a TOML file of [agents.NAME] tables (description, prompt, tools,
    /// deny, model, max-rounds; see docs/tools.md), repeatable.
    ///
    /// The model hands them work with the task tool, which only a rule naming it allows (-a
    /// task, or -a 'task(NAME)' for one agent). An agent's tools are a subset of the run's.
    #[arg(help_heading = "Subagents", long = "agents", value_name = "FILE")]
    pub agents: Vec<PathBuf>,

    /// How deep subagents may nest: 1 lets only the run delegate; 2 lets its subagents delegate
    /// too (when their tools name task).
    #[arg(help_heading = "Subagents", long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=8))]
    pub max_depth: u32,

    /// Add command tools from a manifest (TOML or JSON; see docs/tools.md), repeatable.
    #[arg(
        help_heading = "Tools & allowlist",
        long = "tools-file",
        value_name = "FILE"
    )]
    pub tools_file: Vec<PathBuf>,

    /// Start an MCP server over stdio ("NAME=COMMAND ARGS…") and offer its tools as NAME__TOOL;
    /// repeatable.
    #[arg(help_heading = "MCP", long = "mcp", value_name = "NAME=COMMAND")]
    pub mcp: Vec<String>,

    /// Start the MCP servers of a config file ({"mcpServers": {NAME: {command, args, env}}}).
    #[arg(help_heading = "MCP", long, value_name = "FILE")]
    pub mcp_config: Option<PathBuf>,

    /// How long each MCP server may take to start: answer initialize and list all its tools.
    #[arg(help_heading = "MCP", long, value_name = "SECS", default_value_t = 15.0, value_parser = positive_secs,
          env = "ROUNDS_MCP_STARTUP_TIMEOUT")]
    pub mcp_startup_timeout: f64,
}
