// The one SQLite driver of mq9. The registry opens its own files through this export rather than
// depending on better-sqlite3 itself, so an install compiles the driver once, not once per package.
export { default as SqliteDriver } from "better-sqlite3";
