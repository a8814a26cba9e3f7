" agentflow .flow programs
autocmd BufRead,BufNewFile *.flow setfiletype flow
