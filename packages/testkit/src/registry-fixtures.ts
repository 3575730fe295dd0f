// Registrations that registry tests in several packages share.

/** An MCP server's REGISTER body: a weather server with its server card and two tools. */
export const weatherToolsServer = {
  kind: "mcp-server",
  url: "https://tools.example.com/mcp",
  description: "Live weather data for any city",
  tags: ["weather"],
  server_card: {
    name: "weather-tools",
    version: "1.2.0",
    tools: [
      { name: "get_weather", description: "Current weather and wind for a city" },
      { name: "get_forecast", description: "Five-day weather forecast" },
    ],
  },
} as const;
