// ESLint (typescript-eslint). `src/core/**` importing `vscode` is an error: the core stays pure Node
// (ARCHITECTURE.md); a unit test checks the same rule.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.vscode-test/**',
      '.agent-clis/**',
      'test-results/**',
      '**/*.cjs',
      '**/*.mjs',
      'webview/**/*.css',
    ],
  },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
    },
  },
  {
    files: ['src/core/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: [{ name: 'vscode', message: 'src/core must not import vscode: put VS Code code in src/extension.' }] },
      ],
    },
  },
  {
    // The dashboard page runs in a browser sandbox: it imports only src/protocol/ and its own npm dependencies.
    files: ['webview/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [{ name: 'vscode', message: 'webview/ runs in the page: talk to the host through src/protocol.' }],
          patterns: [
            {
              regex: '^(\\.\\./)+(?!src/protocol/)(src|test|bench|scripts)(/|$)',
              message: 'webview/ may import only src/protocol/ from the project.',
            },
            { regex: '^node:', message: 'webview/ runs in the page: no Node built-ins.' },
          ],
        },
      ],
    },
  },
);
