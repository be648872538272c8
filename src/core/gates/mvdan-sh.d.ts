/**
 * The part of `mvdan-sh` (GopherJS build of mvdan.cc/sh/v3 `syntax`, https://pkg.go.dev/mvdan.cc/sh/v3/syntax)
 * that the guard uses. Nodes are Go structs: fields keep their Go names; positions are methods. Each field access
 * returns a fresh wrapper object: compare nodes by `__internal_object__`.
 */
declare module 'mvdan-sh' {
  namespace sh {
    interface ShPos {
      Offset(): number;
      Line(): number;
      Col(): number;
    }
    /** Any syntax node; fields depend on {@link ShSyntax.NodeType}. */
    interface ShNode {
      Pos(): ShPos;
      End(): ShPos;
      [field: string]: unknown;
    }
    interface ShParser {
      /** Throws a Go error object with `Error()` (`1:3: && must be followed by a statement`). */
      Parse(src: string, name: string): ShNode;
    }
    interface ShParserOption {
      readonly __opt: unique symbol;
    }
    interface ShSyntax {
      NewParser(...opts: ShParserOption[]): ShParser;
      KeepComments(keep: boolean): ShParserOption;
      Variant(lang: number): ShParserOption;
      LangBash: number;
      LangPOSIX: number;
      NodeType(node: ShNode): string;
      Walk(node: ShNode, visit: (node: ShNode | null) => boolean): void;
    }
  }
  const sh: { syntax: sh.ShSyntax };
  export = sh;
}
declare module 'mvdan-sh' {
  export type ShNode = sh.ShNode;
  export type ShSyntax = sh.ShSyntax;
}
