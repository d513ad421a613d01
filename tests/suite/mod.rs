mod exit_codes;
mod outputs;
mod providers;
mod tool_errors;
mod tools_bash;
