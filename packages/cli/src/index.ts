export { ConfigError, loadServeConfig, type ServeConfig, ServeConfigSchema } from "./config.js";
