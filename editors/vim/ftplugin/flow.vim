" agentflow .flow programs: comments, indentation (flowc fmt's: two spaces)
if exists("b:did_ftplugin")
  finish
endif
let b:did_ftplugin = 1

setlocal commentstring=//\ %s
setlocal comments=:///,://
setlocal expandtab shiftwidth=2 softtabstop=2
setlocal suffixesadd=.flow

let b:undo_ftplugin = "setlocal commentstring< comments< expandtab< shiftwidth< softtabstop< suffixesadd<"
