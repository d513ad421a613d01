mod exit_codes;
mod hooks;
mod outputs;
mod providers;
mod retries;
mod run_control;
mod tool_errors;
mod tools_bash;
