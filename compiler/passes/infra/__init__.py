"""The machinery passes are built on, none of it a pass (as torch.fx has passes/infra/): the
pass manager and its records (manager), pipelines and pass specs (pipeline), the runner
(runner), rule tables and rewrite records (rules), the node rewriter (rewrite), calling
conventions of modules whose signature a pass changed (calling), the attribute form of ops
(attribute_form), what registering a pass or a rule table again does (redefinition) and the
discovery of the pass modules with the named pipelines (library).

Its public names are exported by `compiler.passes`; every module of compiler/passes/ outside
this folder is a pass module."""
