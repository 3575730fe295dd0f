import { dashboardAssets, isDashboardAsset } from "@mq9/dashboard";
import type { FastifyInstance } from "fastify";

/** The web dashboard of `mq9 serve`: its built page and scripts at `/`, over the REST API v1. */
export const ServeDashboard = {
  /** Serves the built app, or at `/` a page that says how to build it. */
  async mount(app: FastifyInstance): Promise<void> {
    const root = dashboardAssets();
    if (!root) {
      app.get("/", async (_request, reply) =>
        reply
          .code(503)
          .type("text/plain; charset=utf-8")
          .send(
            "the mq9 dashboard is not built; run `npm run build` in the mq9 checkout, then restart mq9 serve\n",
          ),
      );
      return;
    }
    // Loaded here, not with the CLI: every other command would pay for it.
    const { default: fastifyStatic } = await import("@fastify/static");
    // The app routes with the URL's #fragment, so these few paths are all it needs.
    await app.register(fastifyStatic, { root, prefix: "/", wildcard: false, index: "index.html" });
  },

  openPath: isDashboardAsset,
};
