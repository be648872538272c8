/** dist/zod.js: the real zod, loaded by the CLI bundles' deferred schemas on first use (src/cli/lazyZod.ts). */
export { z } from 'zod';
