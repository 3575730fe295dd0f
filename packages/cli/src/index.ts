export { ConfigError, loadServeConfig, type ServeConfig, ServeConfigSchema } from "./serve/config.js";
