# Your Rein app as an image, FROM Rein's (infra/Dockerfile). Build it from your app's folder
# (app.mjs, its default export defineApp(...); a package.json and package-lock.json if it
# has dependencies of its own, such as MCP server packages):
#   docker build -f <rein checkout>/infra/app.Dockerfile --build-arg REIN_IMAGE=rein:latest -t my-agents:1 .
# or copy this file into your project as its Dockerfile. See docs/deploying-your-app.md.
ARG REIN_IMAGE=rein:latest
FROM ${REIN_IMAGE}
USER root
# Next to Rein's node_modules, so the app's `import '@rein/core'` and `import 'zod'`
# resolve to the image's copies (one zod for the app and Rein).
COPY . app/
# The app's own dependencies, without Rein's packages and zod (keep those in its
# devDependencies: the image provides them).
RUN if [ -f app/package-lock.json ]; then npm ci --prefix app --omit=dev --no-audit --no-fund; fi
USER node
ENV REIN_APP=./app/app.mjs
