# Generated from grammars/launch.lark by `python -m shardshift.formats.megatron.shell_grammar`;
# do not edit (tests/test_megatron_shell.py checks that it is current).
"""LALR(1) tables for the launch-script grammar and the driver that runs them (see
shardshift/formats/megatron/shell_grammar.py)."""

START, END = 0, 35

# (rule name, length, mode): mode 1 splices the children into the parent, 2 is a ?rule
RULES = (
    ('__and_or_star_1', 1, 1),  # __and_or_star_1: NEWLINE
    ('__and_or_star_1', 2, 1),  # __and_or_star_1: __and_or_star_1 NEWLINE
    ('__and_or_star_2', 4, 1),  # __and_or_star_2: __and_or_star_2 _andor_op __and_or_star_1 pipeline
    ('__and_or_star_2', 3, 1),  # __and_or_star_2: __and_or_star_2 _andor_op pipeline
    ('__and_or_star_2', 3, 1),  # __and_or_star_2: _andor_op __and_or_star_1 pipeline
    ('__and_or_star_2', 2, 1),  # __and_or_star_2: _andor_op pipeline
    ('__array_star_6', 1, 1),  # __array_star_6: NEWLINE
    ('__array_star_6', 1, 1),  # __array_star_6: WORD
    ('__array_star_6', 2, 1),  # __array_star_6: __array_star_6 NEWLINE
    ('__array_star_6', 2, 1),  # __array_star_6: __array_star_6 WORD
    ('__body_star_0', 2, 1),  # __body_star_0: __body_star_0 _sep
    ('__body_star_0', 3, 1),  # __body_star_0: __body_star_0 and_or _sep
    ('__body_star_0', 1, 1),  # __body_star_0: _sep
    ('__body_star_0', 2, 1),  # __body_star_0: and_or _sep
    ('__case_block_star_10', 2, 1),  # __case_block_star_10: __case_block_star_10 case_item
    ('__case_block_star_10', 1, 1),  # __case_block_star_10: case_item
    ('__case_item_star_11', 2, 1),  # __case_item_star_11: PIPE WORD
    ('__case_item_star_11', 3, 1),  # __case_item_star_11: __case_item_star_11 PIPE WORD
    ('__command_star_4', 2, 1),  # __command_star_4: __command_star_4 redirect
    ('__command_star_4', 1, 1),  # __command_star_4: redirect
    ('__for_block_star_8', 1, 1),  # __for_block_star_8: WORD
    ('__for_block_star_8', 2, 1),  # __for_block_star_8: __for_block_star_8 WORD
    ('__for_block_star_9', 2, 1),  # __for_block_star_9: __for_block_star_9 _sep
    ('__for_block_star_9', 1, 1),  # __for_block_star_9: _sep
    ('__if_block_star_7', 2, 1),  # __if_block_star_7: __if_block_star_7 elif_part
    ('__if_block_star_7', 1, 1),  # __if_block_star_7: elif_part
    ('__pipeline_star_3', 3, 1),  # __pipeline_star_3: PIPE __and_or_star_1 command
    ('__pipeline_star_3', 2, 1),  # __pipeline_star_3: PIPE command
    ('__pipeline_star_3', 4, 1),  # __pipeline_star_3: __pipeline_star_3 PIPE __and_or_star_1 command
    ('__pipeline_star_3', 3, 1),  # __pipeline_star_3: __pipeline_star_3 PIPE command
    ('__simple_plus_5', 2, 1),  # __simple_plus_5: __simple_plus_5 _item
    ('__simple_plus_5', 1, 1),  # __simple_plus_5: _item
    ('_andor_op', 1, 1),  # _andor_op: AND_IF
    ('_andor_op', 1, 1),  # _andor_op: OR_IF
    ('_item', 1, 1),  # _item: ASSIGN
    ('_item', 1, 1),  # _item: WORD
    ('_item', 1, 1),  # _item: array
    ('_item', 1, 1),  # _item: redirect
    ('_sep', 1, 1),  # _sep: AMP
    ('_sep', 1, 1),  # _sep: NEWLINE
    ('_sep', 1, 1),  # _sep: SEMI
    ('and_or', 1, 2),  # and_or: pipeline
    ('and_or', 2, 2),  # and_or: pipeline __and_or_star_2
    ('array', 2, 0),  # array: ARRAY_OPEN RPAREN
    ('array', 3, 0),  # array: ARRAY_OPEN __array_star_6 RPAREN
    ('body', 0, 0),  # body: 
    ('body', 1, 0),  # body: __body_star_0
    ('body', 2, 0),  # body: __body_star_0 and_or
    ('body', 1, 0),  # body: and_or
    ('case_block', 4, 0),  # case_block: CASE WORD IN ESAC
    ('case_block', 5, 0),  # case_block: CASE WORD IN __and_or_star_1 ESAC
    ('case_block', 6, 0),  # case_block: CASE WORD IN __and_or_star_1 __case_block_star_10 ESAC
    ('case_block', 5, 0),  # case_block: CASE WORD IN __case_block_star_10 ESAC
    ('case_block', 5, 0),  # case_block: CASE WORD __and_or_star_1 IN ESAC
    ('case_block', 6, 0),  # case_block: CASE WORD __and_or_star_1 IN __and_or_star_1 ESAC
    ('case_block', 7, 0),  # case_block: CASE WORD __and_or_star_1 IN __and_or_star_1 __case_block_star_10 ESAC
    ('case_block', 6, 0),  # case_block: CASE WORD __and_or_star_1 IN __case_block_star_10 ESAC
    ('case_item', 4, 0),  # case_item: LPAREN WORD RPAREN body
    ('case_item', 5, 0),  # case_item: LPAREN WORD RPAREN body DSEMI
    ('case_item', 6, 0),  # case_item: LPAREN WORD RPAREN body DSEMI __and_or_star_1
    ('case_item', 5, 0),  # case_item: LPAREN WORD RPAREN body __and_or_star_1
    ('case_item', 5, 0),  # case_item: LPAREN WORD __case_item_star_11 RPAREN body
    ('case_item', 6, 0),  # case_item: LPAREN WORD __case_item_star_11 RPAREN body DSEMI
    ('case_item', 7, 0),  # case_item: LPAREN WORD __case_item_star_11 RPAREN body DSEMI __and_or_star_1
    ('case_item', 6, 0),  # case_item: LPAREN WORD __case_item_star_11 RPAREN body __and_or_star_1
    ('case_item', 3, 0),  # case_item: WORD RPAREN body
    ('case_item', 4, 0),  # case_item: WORD RPAREN body DSEMI
    ('case_item', 5, 0),  # case_item: WORD RPAREN body DSEMI __and_or_star_1
    ('case_item', 4, 0),  # case_item: WORD RPAREN body __and_or_star_1
    ('case_item', 4, 0),  # case_item: WORD __case_item_star_11 RPAREN body
    ('case_item', 5, 0),  # case_item: WORD __case_item_star_11 RPAREN body DSEMI
    ('case_item', 6, 0),  # case_item: WORD __case_item_star_11 RPAREN body DSEMI __and_or_star_1
    ('case_item', 5, 0),  # case_item: WORD __case_item_star_11 RPAREN body __and_or_star_1
    ('command', 1, 2),  # command: compound
    ('command', 2, 2),  # command: compound __command_star_4
    ('command', 1, 2),  # command: funcdef
    ('command', 1, 2),  # command: simple
    ('compound', 1, 2),  # compound: case_block
    ('compound', 1, 2),  # compound: for_block
    ('compound', 1, 2),  # compound: group
    ('compound', 1, 2),  # compound: if_block
    ('compound', 1, 2),  # compound: subshell
    ('compound', 1, 2),  # compound: while_block
    ('elif_part', 4, 0),  # elif_part: ELIF body THEN body
    ('else_part', 2, 0),  # else_part: ELSE body
    ('for_block', 5, 0),  # for_block: FOR WORD DO body DONE
    ('for_block', 6, 0),  # for_block: FOR WORD IN DO body DONE
    ('for_block', 7, 0),  # for_block: FOR WORD IN __for_block_star_8 DO body DONE
    ('for_block', 8, 0),  # for_block: FOR WORD IN __for_block_star_8 __for_block_star_9 DO body DONE
    ('for_block', 7, 0),  # for_block: FOR WORD IN __for_block_star_9 DO body DONE
    ('for_block', 6, 0),  # for_block: FOR WORD __for_block_star_9 DO body DONE
    ('funcdef', 6, 0),  # funcdef: FUNCTION WORD LPAREN RPAREN __and_or_star_1 group
    ('funcdef', 5, 0),  # funcdef: FUNCTION WORD LPAREN RPAREN group
    ('funcdef', 4, 0),  # funcdef: FUNCTION WORD __and_or_star_1 group
    ('funcdef', 3, 0),  # funcdef: FUNCTION WORD group
    ('funcdef', 5, 0),  # funcdef: WORD LPAREN RPAREN __and_or_star_1 group
    ('funcdef', 4, 0),  # funcdef: WORD LPAREN RPAREN group
    ('group', 3, 0),  # group: LBRACE body RBRACE
    ('if_block', 5, 0),  # if_block: IF body THEN body FI
    ('if_block', 6, 0),  # if_block: IF body THEN body __if_block_star_7 FI
    ('if_block', 7, 0),  # if_block: IF body THEN body __if_block_star_7 else_part FI
    ('if_block', 6, 0),  # if_block: IF body THEN body else_part FI
    ('pipeline', 2, 2),  # pipeline: BANG command
    ('pipeline', 3, 2),  # pipeline: BANG command __pipeline_star_3
    ('pipeline', 1, 2),  # pipeline: command
    ('pipeline', 2, 2),  # pipeline: command __pipeline_star_3
    ('redirect', 1, 0),  # redirect: HEREDOC
    ('redirect', 2, 0),  # redirect: REDIR WORD
    ('simple', 1, 0),  # simple: __simple_plus_5
    ('start', 1, 0),  # start: body
    ('subshell', 3, 0),  # subshell: LPAREN body RPAREN
    ('while_block', 5, 0),  # while_block: UNTIL body DO body DONE
    ('while_block', 5, 0),  # while_block: WHILE body DO body DONE
)

# per state: {symbol: action}; action >= 0 shifts to that state, ~action reduces RULES[~action]
ACTIONS = (
    {'$END': -46, 'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 24, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'start': 35, 'subshell': 36, 'while_block': 37},
    {'$END': -39, 'AMP': -39, 'ARRAY_OPEN': -39, 'ASSIGN': -39, 'BANG': -39, 'CASE': -39, 'DO': -39, 'DONE': -39, 'DSEMI': -39, 'ELIF': -39, 'ELSE': -39, 'ESAC': -39, 'FI': -39, 'FOR': -39, 'FUNCTION': -39, 'HEREDOC': -39, 'IF': -39, 'LBRACE': -39, 'LPAREN': -39, 'NEWLINE': -39, 'RBRACE': -39, 'REDIR': -39, 'RPAREN': -39, 'SEMI': -39, 'THEN': -39, 'UNTIL': -39, 'WHILE': -39, 'WORD': -39},
    {'NEWLINE': 38, 'RPAREN': 39, 'WORD': 40, '__array_star_6': 41},
    {'$END': -35, 'AMP': -35, 'AND_IF': -35, 'ARRAY_OPEN': -35, 'ASSIGN': -35, 'DO': -35, 'DONE': -35, 'DSEMI': -35, 'ELIF': -35, 'ELSE': -35, 'ESAC': -35, 'FI': -35, 'HEREDOC': -35, 'LPAREN': -35, 'NEWLINE': -35, 'OR_IF': -35, 'PIPE': -35, 'RBRACE': -35, 'REDIR': -35, 'RPAREN': -35, 'SEMI': -35, 'THEN': -35, 'WORD': -35},
    {'ARRAY_OPEN': 2, 'ASSIGN': 3, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'REDIR': 13, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__simple_plus_5': 19, '_item': 20, 'array': 23, 'case_block': 25, 'command': 42, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'WORD': 43},
    {'WORD': 44},
    {'WORD': 45},
    {'$END': -107, 'AMP': -107, 'AND_IF': -107, 'ARRAY_OPEN': -107, 'ASSIGN': -107, 'DO': -107, 'DONE': -107, 'DSEMI': -107, 'ELIF': -107, 'ELSE': -107, 'ESAC': -107, 'FI': -107, 'HEREDOC': -107, 'LPAREN': -107, 'NEWLINE': -107, 'OR_IF': -107, 'PIPE': -107, 'RBRACE': -107, 'REDIR': -107, 'RPAREN': -107, 'SEMI': -107, 'THEN': -107, 'WORD': -107},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'THEN': -46, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 46, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'RBRACE': -46, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 47, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'RPAREN': -46, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 48, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'$END': -40, 'AMP': -40, 'ARRAY_OPEN': -40, 'ASSIGN': -40, 'BANG': -40, 'CASE': -40, 'DO': -40, 'DONE': -40, 'DSEMI': -40, 'ELIF': -40, 'ELSE': -40, 'ESAC': -40, 'FI': -40, 'FOR': -40, 'FUNCTION': -40, 'HEREDOC': -40, 'IF': -40, 'LBRACE': -40, 'LPAREN': -40, 'NEWLINE': -40, 'RBRACE': -40, 'REDIR': -40, 'RPAREN': -40, 'SEMI': -40, 'THEN': -40, 'UNTIL': -40, 'WHILE': -40, 'WORD': -40},
    {'WORD': 49},
    {'$END': -41, 'AMP': -41, 'ARRAY_OPEN': -41, 'ASSIGN': -41, 'BANG': -41, 'CASE': -41, 'DO': -41, 'DONE': -41, 'DSEMI': -41, 'ELIF': -41, 'ELSE': -41, 'ESAC': -41, 'FI': -41, 'FOR': -41, 'FUNCTION': -41, 'HEREDOC': -41, 'IF': -41, 'LBRACE': -41, 'LPAREN': -41, 'NEWLINE': -41, 'RBRACE': -41, 'REDIR': -41, 'RPAREN': -41, 'SEMI': -41, 'THEN': -41, 'UNTIL': -41, 'WHILE': -41, 'WORD': -41},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DO': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 50, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DO': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 51, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'$END': -36, 'AMP': -36, 'AND_IF': -36, 'ARRAY_OPEN': -36, 'ASSIGN': -36, 'DO': -36, 'DONE': -36, 'DSEMI': -36, 'ELIF': -36, 'ELSE': -36, 'ESAC': -36, 'FI': -36, 'HEREDOC': -36, 'LPAREN': 52, 'NEWLINE': -36, 'OR_IF': -36, 'PIPE': -36, 'RBRACE': -36, 'REDIR': -36, 'RPAREN': -36, 'SEMI': -36, 'THEN': -36, 'WORD': -36},
    {'$END': -47, 'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DO': -47, 'DONE': -47, 'DSEMI': -47, 'ELIF': -47, 'ELSE': -47, 'ESAC': -47, 'FI': -47, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'RBRACE': -47, 'REDIR': 13, 'RPAREN': -47, 'SEMI': 14, 'THEN': -47, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__simple_plus_5': 19, '_item': 20, '_sep': 53, 'and_or': 54, 'array': 23, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'$END': -109, 'AMP': -109, 'AND_IF': -109, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'DO': -109, 'DONE': -109, 'DSEMI': -109, 'ELIF': -109, 'ELSE': -109, 'ESAC': -109, 'FI': -109, 'HEREDOC': 8, 'LPAREN': -109, 'NEWLINE': -109, 'OR_IF': -109, 'PIPE': -109, 'RBRACE': -109, 'REDIR': 13, 'RPAREN': -109, 'SEMI': -109, 'THEN': -109, 'WORD': 55, '_item': 56, 'array': 23, 'redirect': 33},
    {'$END': -32, 'AMP': -32, 'AND_IF': -32, 'ARRAY_OPEN': -32, 'ASSIGN': -32, 'DO': -32, 'DONE': -32, 'DSEMI': -32, 'ELIF': -32, 'ELSE': -32, 'ESAC': -32, 'FI': -32, 'HEREDOC': -32, 'LPAREN': -32, 'NEWLINE': -32, 'OR_IF': -32, 'PIPE': -32, 'RBRACE': -32, 'REDIR': -32, 'RPAREN': -32, 'SEMI': -32, 'THEN': -32, 'WORD': -32},
    {'$END': -13, 'AMP': -13, 'ARRAY_OPEN': -13, 'ASSIGN': -13, 'BANG': -13, 'CASE': -13, 'DO': -13, 'DONE': -13, 'DSEMI': -13, 'ELIF': -13, 'ELSE': -13, 'ESAC': -13, 'FI': -13, 'FOR': -13, 'FUNCTION': -13, 'HEREDOC': -13, 'IF': -13, 'LBRACE': -13, 'LPAREN': -13, 'NEWLINE': -13, 'RBRACE': -13, 'REDIR': -13, 'RPAREN': -13, 'SEMI': -13, 'THEN': -13, 'UNTIL': -13, 'WHILE': -13, 'WORD': -13},
    {'$END': -49, 'AMP': 1, 'DO': -49, 'DONE': -49, 'DSEMI': -49, 'ELIF': -49, 'ELSE': -49, 'ESAC': -49, 'FI': -49, 'LPAREN': -49, 'NEWLINE': 12, 'RBRACE': -49, 'RPAREN': -49, 'SEMI': 14, 'THEN': -49, 'WORD': -49, '_sep': 57},
    {'$END': -37, 'AMP': -37, 'AND_IF': -37, 'ARRAY_OPEN': -37, 'ASSIGN': -37, 'DO': -37, 'DONE': -37, 'DSEMI': -37, 'ELIF': -37, 'ELSE': -37, 'ESAC': -37, 'FI': -37, 'HEREDOC': -37, 'LPAREN': -37, 'NEWLINE': -37, 'OR_IF': -37, 'PIPE': -37, 'RBRACE': -37, 'REDIR': -37, 'RPAREN': -37, 'SEMI': -37, 'THEN': -37, 'WORD': -37},
    {'$END': -110},
    {'$END': -78, 'AMP': -78, 'AND_IF': -78, 'DO': -78, 'DONE': -78, 'DSEMI': -78, 'ELIF': -78, 'ELSE': -78, 'ESAC': -78, 'FI': -78, 'HEREDOC': -78, 'LPAREN': -78, 'NEWLINE': -78, 'OR_IF': -78, 'PIPE': -78, 'RBRACE': -78, 'REDIR': -78, 'RPAREN': -78, 'SEMI': -78, 'THEN': -78, 'WORD': -78},
    {'$END': -105, 'AMP': -105, 'AND_IF': -105, 'DO': -105, 'DONE': -105, 'DSEMI': -105, 'ELIF': -105, 'ELSE': -105, 'ESAC': -105, 'FI': -105, 'LPAREN': -105, 'NEWLINE': -105, 'OR_IF': -105, 'PIPE': 58, 'RBRACE': -105, 'RPAREN': -105, 'SEMI': -105, 'THEN': -105, 'WORD': -105, '__pipeline_star_3': 59},
    {'$END': -74, 'AMP': -74, 'AND_IF': -74, 'DO': -74, 'DONE': -74, 'DSEMI': -74, 'ELIF': -74, 'ELSE': -74, 'ESAC': -74, 'FI': -74, 'HEREDOC': 8, 'LPAREN': -74, 'NEWLINE': -74, 'OR_IF': -74, 'PIPE': -74, 'RBRACE': -74, 'REDIR': 13, 'RPAREN': -74, 'SEMI': -74, 'THEN': -74, 'WORD': -74, '__command_star_4': 60, 'redirect': 61},
    {'$END': -79, 'AMP': -79, 'AND_IF': -79, 'DO': -79, 'DONE': -79, 'DSEMI': -79, 'ELIF': -79, 'ELSE': -79, 'ESAC': -79, 'FI': -79, 'HEREDOC': -79, 'LPAREN': -79, 'NEWLINE': -79, 'OR_IF': -79, 'PIPE': -79, 'RBRACE': -79, 'REDIR': -79, 'RPAREN': -79, 'SEMI': -79, 'THEN': -79, 'WORD': -79},
    {'$END': -76, 'AMP': -76, 'AND_IF': -76, 'DO': -76, 'DONE': -76, 'DSEMI': -76, 'ELIF': -76, 'ELSE': -76, 'ESAC': -76, 'FI': -76, 'LPAREN': -76, 'NEWLINE': -76, 'OR_IF': -76, 'PIPE': -76, 'RBRACE': -76, 'RPAREN': -76, 'SEMI': -76, 'THEN': -76, 'WORD': -76},
    {'$END': -80, 'AMP': -80, 'AND_IF': -80, 'DO': -80, 'DONE': -80, 'DSEMI': -80, 'ELIF': -80, 'ELSE': -80, 'ESAC': -80, 'FI': -80, 'HEREDOC': -80, 'LPAREN': -80, 'NEWLINE': -80, 'OR_IF': -80, 'PIPE': -80, 'RBRACE': -80, 'REDIR': -80, 'RPAREN': -80, 'SEMI': -80, 'THEN': -80, 'WORD': -80},
    {'$END': -81, 'AMP': -81, 'AND_IF': -81, 'DO': -81, 'DONE': -81, 'DSEMI': -81, 'ELIF': -81, 'ELSE': -81, 'ESAC': -81, 'FI': -81, 'HEREDOC': -81, 'LPAREN': -81, 'NEWLINE': -81, 'OR_IF': -81, 'PIPE': -81, 'RBRACE': -81, 'REDIR': -81, 'RPAREN': -81, 'SEMI': -81, 'THEN': -81, 'WORD': -81},
    {'$END': -42, 'AMP': -42, 'AND_IF': 62, 'DO': -42, 'DONE': -42, 'DSEMI': -42, 'ELIF': -42, 'ELSE': -42, 'ESAC': -42, 'FI': -42, 'LPAREN': -42, 'NEWLINE': -42, 'OR_IF': 63, 'RBRACE': -42, 'RPAREN': -42, 'SEMI': -42, 'THEN': -42, 'WORD': -42, '__and_or_star_2': 64, '_andor_op': 65},
    {'$END': -38, 'AMP': -38, 'AND_IF': -38, 'ARRAY_OPEN': -38, 'ASSIGN': -38, 'DO': -38, 'DONE': -38, 'DSEMI': -38, 'ELIF': -38, 'ELSE': -38, 'ESAC': -38, 'FI': -38, 'HEREDOC': -38, 'LPAREN': -38, 'NEWLINE': -38, 'OR_IF': -38, 'PIPE': -38, 'RBRACE': -38, 'REDIR': -38, 'RPAREN': -38, 'SEMI': -38, 'THEN': -38, 'WORD': -38},
    {'$END': -77, 'AMP': -77, 'AND_IF': -77, 'DO': -77, 'DONE': -77, 'DSEMI': -77, 'ELIF': -77, 'ELSE': -77, 'ESAC': -77, 'FI': -77, 'LPAREN': -77, 'NEWLINE': -77, 'OR_IF': -77, 'PIPE': -77, 'RBRACE': -77, 'RPAREN': -77, 'SEMI': -77, 'THEN': -77, 'WORD': -77},
    {},
    {'$END': -82, 'AMP': -82, 'AND_IF': -82, 'DO': -82, 'DONE': -82, 'DSEMI': -82, 'ELIF': -82, 'ELSE': -82, 'ESAC': -82, 'FI': -82, 'HEREDOC': -82, 'LPAREN': -82, 'NEWLINE': -82, 'OR_IF': -82, 'PIPE': -82, 'RBRACE': -82, 'REDIR': -82, 'RPAREN': -82, 'SEMI': -82, 'THEN': -82, 'WORD': -82},
    {'$END': -83, 'AMP': -83, 'AND_IF': -83, 'DO': -83, 'DONE': -83, 'DSEMI': -83, 'ELIF': -83, 'ELSE': -83, 'ESAC': -83, 'FI': -83, 'HEREDOC': -83, 'LPAREN': -83, 'NEWLINE': -83, 'OR_IF': -83, 'PIPE': -83, 'RBRACE': -83, 'REDIR': -83, 'RPAREN': -83, 'SEMI': -83, 'THEN': -83, 'WORD': -83},
    {'NEWLINE': -7, 'RPAREN': -7, 'WORD': -7},
    {'$END': -44, 'AMP': -44, 'AND_IF': -44, 'ARRAY_OPEN': -44, 'ASSIGN': -44, 'DO': -44, 'DONE': -44, 'DSEMI': -44, 'ELIF': -44, 'ELSE': -44, 'ESAC': -44, 'FI': -44, 'HEREDOC': -44, 'LPAREN': -44, 'NEWLINE': -44, 'OR_IF': -44, 'PIPE': -44, 'RBRACE': -44, 'REDIR': -44, 'RPAREN': -44, 'SEMI': -44, 'THEN': -44, 'WORD': -44},
    {'NEWLINE': -8, 'RPAREN': -8, 'WORD': -8},
    {'NEWLINE': 66, 'RPAREN': 67, 'WORD': 68},
    {'$END': -103, 'AMP': -103, 'AND_IF': -103, 'DO': -103, 'DONE': -103, 'DSEMI': -103, 'ELIF': -103, 'ELSE': -103, 'ESAC': -103, 'FI': -103, 'LPAREN': -103, 'NEWLINE': -103, 'OR_IF': -103, 'PIPE': 58, 'RBRACE': -103, 'RPAREN': -103, 'SEMI': -103, 'THEN': -103, 'WORD': -103, '__pipeline_star_3': 69},
    {'IN': 70, 'NEWLINE': 71, '__and_or_star_1': 72},
    {'AMP': 1, 'DO': 73, 'IN': 74, 'NEWLINE': 12, 'SEMI': 14, '__for_block_star_9': 75, '_sep': 76},
    {'LBRACE': 10, 'LPAREN': 77, 'NEWLINE': 71, '__and_or_star_1': 78, 'group': 79},
    {'THEN': 80},
    {'RBRACE': 81},
    {'RPAREN': 82},
    {'$END': -108, 'AMP': -108, 'AND_IF': -108, 'ARRAY_OPEN': -108, 'ASSIGN': -108, 'DO': -108, 'DONE': -108, 'DSEMI': -108, 'ELIF': -108, 'ELSE': -108, 'ESAC': -108, 'FI': -108, 'HEREDOC': -108, 'LPAREN': -108, 'NEWLINE': -108, 'OR_IF': -108, 'PIPE': -108, 'RBRACE': -108, 'REDIR': -108, 'RPAREN': -108, 'SEMI': -108, 'THEN': -108, 'WORD': -108},
    {'DO': 83},
    {'DO': 84},
    {'RPAREN': 85},
    {'$END': -11, 'AMP': -11, 'ARRAY_OPEN': -11, 'ASSIGN': -11, 'BANG': -11, 'CASE': -11, 'DO': -11, 'DONE': -11, 'DSEMI': -11, 'ELIF': -11, 'ELSE': -11, 'ESAC': -11, 'FI': -11, 'FOR': -11, 'FUNCTION': -11, 'HEREDOC': -11, 'IF': -11, 'LBRACE': -11, 'LPAREN': -11, 'NEWLINE': -11, 'RBRACE': -11, 'REDIR': -11, 'RPAREN': -11, 'SEMI': -11, 'THEN': -11, 'UNTIL': -11, 'WHILE': -11, 'WORD': -11},
    {'$END': -48, 'AMP': 1, 'DO': -48, 'DONE': -48, 'DSEMI': -48, 'ELIF': -48, 'ELSE': -48, 'ESAC': -48, 'FI': -48, 'LPAREN': -48, 'NEWLINE': 12, 'RBRACE': -48, 'RPAREN': -48, 'SEMI': 14, 'THEN': -48, 'WORD': -48, '_sep': 86},
    {'$END': -36, 'AMP': -36, 'AND_IF': -36, 'ARRAY_OPEN': -36, 'ASSIGN': -36, 'DO': -36, 'DONE': -36, 'DSEMI': -36, 'ELIF': -36, 'ELSE': -36, 'ESAC': -36, 'FI': -36, 'HEREDOC': -36, 'LPAREN': -36, 'NEWLINE': -36, 'OR_IF': -36, 'PIPE': -36, 'RBRACE': -36, 'REDIR': -36, 'RPAREN': -36, 'SEMI': -36, 'THEN': -36, 'WORD': -36},
    {'$END': -31, 'AMP': -31, 'AND_IF': -31, 'ARRAY_OPEN': -31, 'ASSIGN': -31, 'DO': -31, 'DONE': -31, 'DSEMI': -31, 'ELIF': -31, 'ELSE': -31, 'ESAC': -31, 'FI': -31, 'HEREDOC': -31, 'LPAREN': -31, 'NEWLINE': -31, 'OR_IF': -31, 'PIPE': -31, 'RBRACE': -31, 'REDIR': -31, 'RPAREN': -31, 'SEMI': -31, 'THEN': -31, 'WORD': -31},
    {'$END': -14, 'AMP': -14, 'ARRAY_OPEN': -14, 'ASSIGN': -14, 'BANG': -14, 'CASE': -14, 'DO': -14, 'DONE': -14, 'DSEMI': -14, 'ELIF': -14, 'ELSE': -14, 'ESAC': -14, 'FI': -14, 'FOR': -14, 'FUNCTION': -14, 'HEREDOC': -14, 'IF': -14, 'LBRACE': -14, 'LPAREN': -14, 'NEWLINE': -14, 'RBRACE': -14, 'REDIR': -14, 'RPAREN': -14, 'SEMI': -14, 'THEN': -14, 'UNTIL': -14, 'WHILE': -14, 'WORD': -14},
    {'ARRAY_OPEN': 2, 'ASSIGN': 3, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 71, 'REDIR': 13, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__and_or_star_1': 87, '__simple_plus_5': 19, '_item': 20, 'array': 23, 'case_block': 25, 'command': 88, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'$END': -106, 'AMP': -106, 'AND_IF': -106, 'DO': -106, 'DONE': -106, 'DSEMI': -106, 'ELIF': -106, 'ELSE': -106, 'ESAC': -106, 'FI': -106, 'LPAREN': -106, 'NEWLINE': -106, 'OR_IF': -106, 'PIPE': 89, 'RBRACE': -106, 'RPAREN': -106, 'SEMI': -106, 'THEN': -106, 'WORD': -106},
    {'$END': -75, 'AMP': -75, 'AND_IF': -75, 'DO': -75, 'DONE': -75, 'DSEMI': -75, 'ELIF': -75, 'ELSE': -75, 'ESAC': -75, 'FI': -75, 'HEREDOC': 8, 'LPAREN': -75, 'NEWLINE': -75, 'OR_IF': -75, 'PIPE': -75, 'RBRACE': -75, 'REDIR': 13, 'RPAREN': -75, 'SEMI': -75, 'THEN': -75, 'WORD': -75, 'redirect': 90},
    {'$END': -20, 'AMP': -20, 'AND_IF': -20, 'DO': -20, 'DONE': -20, 'DSEMI': -20, 'ELIF': -20, 'ELSE': -20, 'ESAC': -20, 'FI': -20, 'HEREDOC': -20, 'LPAREN': -20, 'NEWLINE': -20, 'OR_IF': -20, 'PIPE': -20, 'RBRACE': -20, 'REDIR': -20, 'RPAREN': -20, 'SEMI': -20, 'THEN': -20, 'WORD': -20},
    {'ARRAY_OPEN': -33, 'ASSIGN': -33, 'BANG': -33, 'CASE': -33, 'FOR': -33, 'FUNCTION': -33, 'HEREDOC': -33, 'IF': -33, 'LBRACE': -33, 'LPAREN': -33, 'NEWLINE': -33, 'REDIR': -33, 'UNTIL': -33, 'WHILE': -33, 'WORD': -33},
    {'ARRAY_OPEN': -34, 'ASSIGN': -34, 'BANG': -34, 'CASE': -34, 'FOR': -34, 'FUNCTION': -34, 'HEREDOC': -34, 'IF': -34, 'LBRACE': -34, 'LPAREN': -34, 'NEWLINE': -34, 'REDIR': -34, 'UNTIL': -34, 'WHILE': -34, 'WORD': -34},
    {'$END': -43, 'AMP': -43, 'AND_IF': 62, 'DO': -43, 'DONE': -43, 'DSEMI': -43, 'ELIF': -43, 'ELSE': -43, 'ESAC': -43, 'FI': -43, 'LPAREN': -43, 'NEWLINE': -43, 'OR_IF': 63, 'RBRACE': -43, 'RPAREN': -43, 'SEMI': -43, 'THEN': -43, 'WORD': -43, '_andor_op': 91},
    {'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 71, 'REDIR': 13, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__and_or_star_1': 92, '__simple_plus_5': 19, '_item': 20, 'array': 23, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 93, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'NEWLINE': -9, 'RPAREN': -9, 'WORD': -9},
    {'$END': -45, 'AMP': -45, 'AND_IF': -45, 'ARRAY_OPEN': -45, 'ASSIGN': -45, 'DO': -45, 'DONE': -45, 'DSEMI': -45, 'ELIF': -45, 'ELSE': -45, 'ESAC': -45, 'FI': -45, 'HEREDOC': -45, 'LPAREN': -45, 'NEWLINE': -45, 'OR_IF': -45, 'PIPE': -45, 'RBRACE': -45, 'REDIR': -45, 'RPAREN': -45, 'SEMI': -45, 'THEN': -45, 'WORD': -45},
    {'NEWLINE': -10, 'RPAREN': -10, 'WORD': -10},
    {'$END': -104, 'AMP': -104, 'AND_IF': -104, 'DO': -104, 'DONE': -104, 'DSEMI': -104, 'ELIF': -104, 'ELSE': -104, 'ESAC': -104, 'FI': -104, 'LPAREN': -104, 'NEWLINE': -104, 'OR_IF': -104, 'PIPE': 89, 'RBRACE': -104, 'RPAREN': -104, 'SEMI': -104, 'THEN': -104, 'WORD': -104},
    {'ESAC': 94, 'LPAREN': 95, 'NEWLINE': 71, 'WORD': 96, '__and_or_star_1': 97, '__case_block_star_10': 98, 'case_item': 99},
    {'ARRAY_OPEN': -1, 'ASSIGN': -1, 'BANG': -1, 'CASE': -1, 'ESAC': -1, 'FOR': -1, 'FUNCTION': -1, 'HEREDOC': -1, 'IF': -1, 'IN': -1, 'LBRACE': -1, 'LPAREN': -1, 'NEWLINE': -1, 'REDIR': -1, 'UNTIL': -1, 'WHILE': -1, 'WORD': -1},
    {'IN': 100, 'NEWLINE': 101},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DONE': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 102, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'AMP': 1, 'DO': 103, 'NEWLINE': 12, 'SEMI': 14, 'WORD': 104, '__for_block_star_8': 105, '__for_block_star_9': 106, '_sep': 76},
    {'AMP': 1, 'DO': 107, 'NEWLINE': 12, 'SEMI': 14, '_sep': 108},
    {'AMP': -24, 'DO': -24, 'NEWLINE': -24, 'SEMI': -24},
    {'RPAREN': 109},
    {'LBRACE': 10, 'NEWLINE': 101, 'group': 110},
    {'$END': -95, 'AMP': -95, 'AND_IF': -95, 'DO': -95, 'DONE': -95, 'DSEMI': -95, 'ELIF': -95, 'ELSE': -95, 'ESAC': -95, 'FI': -95, 'LPAREN': -95, 'NEWLINE': -95, 'OR_IF': -95, 'PIPE': -95, 'RBRACE': -95, 'RPAREN': -95, 'SEMI': -95, 'THEN': -95, 'WORD': -95},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'ELIF': -46, 'ELSE': -46, 'FI': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 111, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'$END': -98, 'AMP': -98, 'AND_IF': -98, 'DO': -98, 'DONE': -98, 'DSEMI': -98, 'ELIF': -98, 'ELSE': -98, 'ESAC': -98, 'FI': -98, 'HEREDOC': -98, 'LPAREN': -98, 'NEWLINE': -98, 'OR_IF': -98, 'PIPE': -98, 'RBRACE': -98, 'REDIR': -98, 'RPAREN': -98, 'SEMI': -98, 'THEN': -98, 'WORD': -98},
    {'$END': -111, 'AMP': -111, 'AND_IF': -111, 'DO': -111, 'DONE': -111, 'DSEMI': -111, 'ELIF': -111, 'ELSE': -111, 'ESAC': -111, 'FI': -111, 'HEREDOC': -111, 'LPAREN': -111, 'NEWLINE': -111, 'OR_IF': -111, 'PIPE': -111, 'RBRACE': -111, 'REDIR': -111, 'RPAREN': -111, 'SEMI': -111, 'THEN': -111, 'WORD': -111},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DONE': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 112, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DONE': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 113, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'LBRACE': 10, 'NEWLINE': 71, '__and_or_star_1': 114, 'group': 115},
    {'$END': -12, 'AMP': -12, 'ARRAY_OPEN': -12, 'ASSIGN': -12, 'BANG': -12, 'CASE': -12, 'DO': -12, 'DONE': -12, 'DSEMI': -12, 'ELIF': -12, 'ELSE': -12, 'ESAC': -12, 'FI': -12, 'FOR': -12, 'FUNCTION': -12, 'HEREDOC': -12, 'IF': -12, 'LBRACE': -12, 'LPAREN': -12, 'NEWLINE': -12, 'RBRACE': -12, 'REDIR': -12, 'RPAREN': -12, 'SEMI': -12, 'THEN': -12, 'UNTIL': -12, 'WHILE': -12, 'WORD': -12},
    {'ARRAY_OPEN': 2, 'ASSIGN': 3, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 101, 'REDIR': 13, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__simple_plus_5': 19, '_item': 20, 'array': 23, 'case_block': 25, 'command': 116, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'$END': -28, 'AMP': -28, 'AND_IF': -28, 'DO': -28, 'DONE': -28, 'DSEMI': -28, 'ELIF': -28, 'ELSE': -28, 'ESAC': -28, 'FI': -28, 'LPAREN': -28, 'NEWLINE': -28, 'OR_IF': -28, 'PIPE': -28, 'RBRACE': -28, 'RPAREN': -28, 'SEMI': -28, 'THEN': -28, 'WORD': -28},
    {'ARRAY_OPEN': 2, 'ASSIGN': 3, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 71, 'REDIR': 13, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__and_or_star_1': 117, '__simple_plus_5': 19, '_item': 20, 'array': 23, 'case_block': 25, 'command': 118, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'$END': -19, 'AMP': -19, 'AND_IF': -19, 'DO': -19, 'DONE': -19, 'DSEMI': -19, 'ELIF': -19, 'ELSE': -19, 'ESAC': -19, 'FI': -19, 'HEREDOC': -19, 'LPAREN': -19, 'NEWLINE': -19, 'OR_IF': -19, 'PIPE': -19, 'RBRACE': -19, 'REDIR': -19, 'RPAREN': -19, 'SEMI': -19, 'THEN': -19, 'WORD': -19},
    {'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 71, 'REDIR': 13, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__and_or_star_1': 119, '__simple_plus_5': 19, '_item': 20, 'array': 23, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 120, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 101, 'REDIR': 13, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__simple_plus_5': 19, '_item': 20, 'array': 23, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 121, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'$END': -6, 'AMP': -6, 'AND_IF': -6, 'DO': -6, 'DONE': -6, 'DSEMI': -6, 'ELIF': -6, 'ELSE': -6, 'ESAC': -6, 'FI': -6, 'LPAREN': -6, 'NEWLINE': -6, 'OR_IF': -6, 'RBRACE': -6, 'RPAREN': -6, 'SEMI': -6, 'THEN': -6, 'WORD': -6},
    {'$END': -50, 'AMP': -50, 'AND_IF': -50, 'DO': -50, 'DONE': -50, 'DSEMI': -50, 'ELIF': -50, 'ELSE': -50, 'ESAC': -50, 'FI': -50, 'HEREDOC': -50, 'LPAREN': -50, 'NEWLINE': -50, 'OR_IF': -50, 'PIPE': -50, 'RBRACE': -50, 'REDIR': -50, 'RPAREN': -50, 'SEMI': -50, 'THEN': -50, 'WORD': -50},
    {'WORD': 122},
    {'PIPE': 123, 'RPAREN': 124, '__case_item_star_11': 125},
    {'ESAC': 126, 'LPAREN': 95, 'NEWLINE': 101, 'WORD': 96, '__case_block_star_10': 127, 'case_item': 99},
    {'ESAC': 128, 'LPAREN': 95, 'WORD': 96, 'case_item': 129},
    {'ESAC': -16, 'LPAREN': -16, 'WORD': -16},
    {'ESAC': 130, 'LPAREN': 95, 'NEWLINE': 71, 'WORD': 96, '__and_or_star_1': 131, '__case_block_star_10': 132, 'case_item': 99},
    {'ARRAY_OPEN': -2, 'ASSIGN': -2, 'BANG': -2, 'CASE': -2, 'ESAC': -2, 'FOR': -2, 'FUNCTION': -2, 'HEREDOC': -2, 'IF': -2, 'IN': -2, 'LBRACE': -2, 'LPAREN': -2, 'NEWLINE': -2, 'REDIR': -2, 'UNTIL': -2, 'WHILE': -2, 'WORD': -2},
    {'DONE': 133},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DONE': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 134, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'AMP': -21, 'DO': -21, 'NEWLINE': -21, 'SEMI': -21, 'WORD': -21},
    {'AMP': 1, 'DO': 135, 'NEWLINE': 12, 'SEMI': 14, 'WORD': 136, '__for_block_star_9': 137, '_sep': 76},
    {'AMP': 1, 'DO': 138, 'NEWLINE': 12, 'SEMI': 14, '_sep': 108},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DONE': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 139, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'AMP': -23, 'DO': -23, 'NEWLINE': -23, 'SEMI': -23},
    {'LBRACE': 10, 'NEWLINE': 71, '__and_or_star_1': 140, 'group': 141},
    {'$END': -94, 'AMP': -94, 'AND_IF': -94, 'DO': -94, 'DONE': -94, 'DSEMI': -94, 'ELIF': -94, 'ELSE': -94, 'ESAC': -94, 'FI': -94, 'LPAREN': -94, 'NEWLINE': -94, 'OR_IF': -94, 'PIPE': -94, 'RBRACE': -94, 'RPAREN': -94, 'SEMI': -94, 'THEN': -94, 'WORD': -94},
    {'ELIF': 142, 'ELSE': 143, 'FI': 144, '__if_block_star_7': 145, 'elif_part': 146, 'else_part': 147},
    {'DONE': 148},
    {'DONE': 149},
    {'LBRACE': 10, 'NEWLINE': 101, 'group': 150},
    {'$END': -97, 'AMP': -97, 'AND_IF': -97, 'DO': -97, 'DONE': -97, 'DSEMI': -97, 'ELIF': -97, 'ELSE': -97, 'ESAC': -97, 'FI': -97, 'LPAREN': -97, 'NEWLINE': -97, 'OR_IF': -97, 'PIPE': -97, 'RBRACE': -97, 'RPAREN': -97, 'SEMI': -97, 'THEN': -97, 'WORD': -97},
    {'$END': -27, 'AMP': -27, 'AND_IF': -27, 'DO': -27, 'DONE': -27, 'DSEMI': -27, 'ELIF': -27, 'ELSE': -27, 'ESAC': -27, 'FI': -27, 'LPAREN': -27, 'NEWLINE': -27, 'OR_IF': -27, 'PIPE': -27, 'RBRACE': -27, 'RPAREN': -27, 'SEMI': -27, 'THEN': -27, 'WORD': -27},
    {'ARRAY_OPEN': 2, 'ASSIGN': 3, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 101, 'REDIR': 13, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__simple_plus_5': 19, '_item': 20, 'array': 23, 'case_block': 25, 'command': 151, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'$END': -30, 'AMP': -30, 'AND_IF': -30, 'DO': -30, 'DONE': -30, 'DSEMI': -30, 'ELIF': -30, 'ELSE': -30, 'ESAC': -30, 'FI': -30, 'LPAREN': -30, 'NEWLINE': -30, 'OR_IF': -30, 'PIPE': -30, 'RBRACE': -30, 'RPAREN': -30, 'SEMI': -30, 'THEN': -30, 'WORD': -30},
    {'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 101, 'REDIR': 13, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__simple_plus_5': 19, '_item': 20, 'array': 23, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 152, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'$END': -4, 'AMP': -4, 'AND_IF': -4, 'DO': -4, 'DONE': -4, 'DSEMI': -4, 'ELIF': -4, 'ELSE': -4, 'ESAC': -4, 'FI': -4, 'LPAREN': -4, 'NEWLINE': -4, 'OR_IF': -4, 'RBRACE': -4, 'RPAREN': -4, 'SEMI': -4, 'THEN': -4, 'WORD': -4},
    {'$END': -5, 'AMP': -5, 'AND_IF': -5, 'DO': -5, 'DONE': -5, 'DSEMI': -5, 'ELIF': -5, 'ELSE': -5, 'ESAC': -5, 'FI': -5, 'LPAREN': -5, 'NEWLINE': -5, 'OR_IF': -5, 'RBRACE': -5, 'RPAREN': -5, 'SEMI': -5, 'THEN': -5, 'WORD': -5},
    {'PIPE': 123, 'RPAREN': 153, '__case_item_star_11': 154},
    {'WORD': 155},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DSEMI': -46, 'ESAC': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 156, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'PIPE': 157, 'RPAREN': 158},
    {'$END': -51, 'AMP': -51, 'AND_IF': -51, 'DO': -51, 'DONE': -51, 'DSEMI': -51, 'ELIF': -51, 'ELSE': -51, 'ESAC': -51, 'FI': -51, 'HEREDOC': -51, 'LPAREN': -51, 'NEWLINE': -51, 'OR_IF': -51, 'PIPE': -51, 'RBRACE': -51, 'REDIR': -51, 'RPAREN': -51, 'SEMI': -51, 'THEN': -51, 'WORD': -51},
    {'ESAC': 159, 'LPAREN': 95, 'WORD': 96, 'case_item': 129},
    {'$END': -53, 'AMP': -53, 'AND_IF': -53, 'DO': -53, 'DONE': -53, 'DSEMI': -53, 'ELIF': -53, 'ELSE': -53, 'ESAC': -53, 'FI': -53, 'HEREDOC': -53, 'LPAREN': -53, 'NEWLINE': -53, 'OR_IF': -53, 'PIPE': -53, 'RBRACE': -53, 'REDIR': -53, 'RPAREN': -53, 'SEMI': -53, 'THEN': -53, 'WORD': -53},
    {'ESAC': -15, 'LPAREN': -15, 'WORD': -15},
    {'$END': -54, 'AMP': -54, 'AND_IF': -54, 'DO': -54, 'DONE': -54, 'DSEMI': -54, 'ELIF': -54, 'ELSE': -54, 'ESAC': -54, 'FI': -54, 'HEREDOC': -54, 'LPAREN': -54, 'NEWLINE': -54, 'OR_IF': -54, 'PIPE': -54, 'RBRACE': -54, 'REDIR': -54, 'RPAREN': -54, 'SEMI': -54, 'THEN': -54, 'WORD': -54},
    {'ESAC': 160, 'LPAREN': 95, 'NEWLINE': 101, 'WORD': 96, '__case_block_star_10': 161, 'case_item': 99},
    {'ESAC': 162, 'LPAREN': 95, 'WORD': 96, 'case_item': 129},
    {'$END': -86, 'AMP': -86, 'AND_IF': -86, 'DO': -86, 'DONE': -86, 'DSEMI': -86, 'ELIF': -86, 'ELSE': -86, 'ESAC': -86, 'FI': -86, 'HEREDOC': -86, 'LPAREN': -86, 'NEWLINE': -86, 'OR_IF': -86, 'PIPE': -86, 'RBRACE': -86, 'REDIR': -86, 'RPAREN': -86, 'SEMI': -86, 'THEN': -86, 'WORD': -86},
    {'DONE': 163},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DONE': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 164, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'AMP': -22, 'DO': -22, 'NEWLINE': -22, 'SEMI': -22, 'WORD': -22},
    {'AMP': 1, 'DO': 165, 'NEWLINE': 12, 'SEMI': 14, '_sep': 108},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DONE': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 166, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'DONE': 167},
    {'LBRACE': 10, 'NEWLINE': 101, 'group': 168},
    {'$END': -93, 'AMP': -93, 'AND_IF': -93, 'DO': -93, 'DONE': -93, 'DSEMI': -93, 'ELIF': -93, 'ELSE': -93, 'ESAC': -93, 'FI': -93, 'LPAREN': -93, 'NEWLINE': -93, 'OR_IF': -93, 'PIPE': -93, 'RBRACE': -93, 'RPAREN': -93, 'SEMI': -93, 'THEN': -93, 'WORD': -93},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'THEN': -46, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 169, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'FI': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 170, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'$END': -99, 'AMP': -99, 'AND_IF': -99, 'DO': -99, 'DONE': -99, 'DSEMI': -99, 'ELIF': -99, 'ELSE': -99, 'ESAC': -99, 'FI': -99, 'HEREDOC': -99, 'LPAREN': -99, 'NEWLINE': -99, 'OR_IF': -99, 'PIPE': -99, 'RBRACE': -99, 'REDIR': -99, 'RPAREN': -99, 'SEMI': -99, 'THEN': -99, 'WORD': -99},
    {'ELIF': 142, 'ELSE': 143, 'FI': 171, 'elif_part': 172, 'else_part': 173},
    {'ELIF': -26, 'ELSE': -26, 'FI': -26},
    {'FI': 174},
    {'$END': -112, 'AMP': -112, 'AND_IF': -112, 'DO': -112, 'DONE': -112, 'DSEMI': -112, 'ELIF': -112, 'ELSE': -112, 'ESAC': -112, 'FI': -112, 'HEREDOC': -112, 'LPAREN': -112, 'NEWLINE': -112, 'OR_IF': -112, 'PIPE': -112, 'RBRACE': -112, 'REDIR': -112, 'RPAREN': -112, 'SEMI': -112, 'THEN': -112, 'WORD': -112},
    {'$END': -113, 'AMP': -113, 'AND_IF': -113, 'DO': -113, 'DONE': -113, 'DSEMI': -113, 'ELIF': -113, 'ELSE': -113, 'ESAC': -113, 'FI': -113, 'HEREDOC': -113, 'LPAREN': -113, 'NEWLINE': -113, 'OR_IF': -113, 'PIPE': -113, 'RBRACE': -113, 'REDIR': -113, 'RPAREN': -113, 'SEMI': -113, 'THEN': -113, 'WORD': -113},
    {'$END': -96, 'AMP': -96, 'AND_IF': -96, 'DO': -96, 'DONE': -96, 'DSEMI': -96, 'ELIF': -96, 'ELSE': -96, 'ESAC': -96, 'FI': -96, 'LPAREN': -96, 'NEWLINE': -96, 'OR_IF': -96, 'PIPE': -96, 'RBRACE': -96, 'RPAREN': -96, 'SEMI': -96, 'THEN': -96, 'WORD': -96},
    {'$END': -29, 'AMP': -29, 'AND_IF': -29, 'DO': -29, 'DONE': -29, 'DSEMI': -29, 'ELIF': -29, 'ELSE': -29, 'ESAC': -29, 'FI': -29, 'LPAREN': -29, 'NEWLINE': -29, 'OR_IF': -29, 'PIPE': -29, 'RBRACE': -29, 'RPAREN': -29, 'SEMI': -29, 'THEN': -29, 'WORD': -29},
    {'$END': -3, 'AMP': -3, 'AND_IF': -3, 'DO': -3, 'DONE': -3, 'DSEMI': -3, 'ELIF': -3, 'ELSE': -3, 'ESAC': -3, 'FI': -3, 'LPAREN': -3, 'NEWLINE': -3, 'OR_IF': -3, 'RBRACE': -3, 'RPAREN': -3, 'SEMI': -3, 'THEN': -3, 'WORD': -3},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DSEMI': -46, 'ESAC': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 175, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'PIPE': 157, 'RPAREN': 176},
    {'PIPE': -17, 'RPAREN': -17},
    {'DSEMI': 177, 'ESAC': -66, 'LPAREN': -66, 'NEWLINE': 71, 'WORD': -66, '__and_or_star_1': 178},
    {'WORD': 179},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DSEMI': -46, 'ESAC': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 180, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'$END': -52, 'AMP': -52, 'AND_IF': -52, 'DO': -52, 'DONE': -52, 'DSEMI': -52, 'ELIF': -52, 'ELSE': -52, 'ESAC': -52, 'FI': -52, 'HEREDOC': -52, 'LPAREN': -52, 'NEWLINE': -52, 'OR_IF': -52, 'PIPE': -52, 'RBRACE': -52, 'REDIR': -52, 'RPAREN': -52, 'SEMI': -52, 'THEN': -52, 'WORD': -52},
    {'$END': -55, 'AMP': -55, 'AND_IF': -55, 'DO': -55, 'DONE': -55, 'DSEMI': -55, 'ELIF': -55, 'ELSE': -55, 'ESAC': -55, 'FI': -55, 'HEREDOC': -55, 'LPAREN': -55, 'NEWLINE': -55, 'OR_IF': -55, 'PIPE': -55, 'RBRACE': -55, 'REDIR': -55, 'RPAREN': -55, 'SEMI': -55, 'THEN': -55, 'WORD': -55},
    {'ESAC': 181, 'LPAREN': 95, 'WORD': 96, 'case_item': 129},
    {'$END': -57, 'AMP': -57, 'AND_IF': -57, 'DO': -57, 'DONE': -57, 'DSEMI': -57, 'ELIF': -57, 'ELSE': -57, 'ESAC': -57, 'FI': -57, 'HEREDOC': -57, 'LPAREN': -57, 'NEWLINE': -57, 'OR_IF': -57, 'PIPE': -57, 'RBRACE': -57, 'REDIR': -57, 'RPAREN': -57, 'SEMI': -57, 'THEN': -57, 'WORD': -57},
    {'$END': -87, 'AMP': -87, 'AND_IF': -87, 'DO': -87, 'DONE': -87, 'DSEMI': -87, 'ELIF': -87, 'ELSE': -87, 'ESAC': -87, 'FI': -87, 'HEREDOC': -87, 'LPAREN': -87, 'NEWLINE': -87, 'OR_IF': -87, 'PIPE': -87, 'RBRACE': -87, 'REDIR': -87, 'RPAREN': -87, 'SEMI': -87, 'THEN': -87, 'WORD': -87},
    {'DONE': 182},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DONE': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 183, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'DONE': 184},
    {'$END': -91, 'AMP': -91, 'AND_IF': -91, 'DO': -91, 'DONE': -91, 'DSEMI': -91, 'ELIF': -91, 'ELSE': -91, 'ESAC': -91, 'FI': -91, 'HEREDOC': -91, 'LPAREN': -91, 'NEWLINE': -91, 'OR_IF': -91, 'PIPE': -91, 'RBRACE': -91, 'REDIR': -91, 'RPAREN': -91, 'SEMI': -91, 'THEN': -91, 'WORD': -91},
    {'$END': -92, 'AMP': -92, 'AND_IF': -92, 'DO': -92, 'DONE': -92, 'DSEMI': -92, 'ELIF': -92, 'ELSE': -92, 'ESAC': -92, 'FI': -92, 'LPAREN': -92, 'NEWLINE': -92, 'OR_IF': -92, 'PIPE': -92, 'RBRACE': -92, 'RPAREN': -92, 'SEMI': -92, 'THEN': -92, 'WORD': -92},
    {'THEN': 185},
    {'FI': -85},
    {'$END': -100, 'AMP': -100, 'AND_IF': -100, 'DO': -100, 'DONE': -100, 'DSEMI': -100, 'ELIF': -100, 'ELSE': -100, 'ESAC': -100, 'FI': -100, 'HEREDOC': -100, 'LPAREN': -100, 'NEWLINE': -100, 'OR_IF': -100, 'PIPE': -100, 'RBRACE': -100, 'REDIR': -100, 'RPAREN': -100, 'SEMI': -100, 'THEN': -100, 'WORD': -100},
    {'ELIF': -25, 'ELSE': -25, 'FI': -25},
    {'FI': 186},
    {'$END': -102, 'AMP': -102, 'AND_IF': -102, 'DO': -102, 'DONE': -102, 'DSEMI': -102, 'ELIF': -102, 'ELSE': -102, 'ESAC': -102, 'FI': -102, 'HEREDOC': -102, 'LPAREN': -102, 'NEWLINE': -102, 'OR_IF': -102, 'PIPE': -102, 'RBRACE': -102, 'REDIR': -102, 'RPAREN': -102, 'SEMI': -102, 'THEN': -102, 'WORD': -102},
    {'DSEMI': 187, 'ESAC': -58, 'LPAREN': -58, 'NEWLINE': 71, 'WORD': -58, '__and_or_star_1': 188},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'DSEMI': -46, 'ESAC': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 189, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'ESAC': -67, 'LPAREN': -67, 'NEWLINE': 71, 'WORD': -67, '__and_or_star_1': 190},
    {'ESAC': -69, 'LPAREN': -69, 'NEWLINE': 101, 'WORD': -69},
    {'PIPE': -18, 'RPAREN': -18},
    {'DSEMI': 191, 'ESAC': -70, 'LPAREN': -70, 'NEWLINE': 71, 'WORD': -70, '__and_or_star_1': 192},
    {'$END': -56, 'AMP': -56, 'AND_IF': -56, 'DO': -56, 'DONE': -56, 'DSEMI': -56, 'ELIF': -56, 'ELSE': -56, 'ESAC': -56, 'FI': -56, 'HEREDOC': -56, 'LPAREN': -56, 'NEWLINE': -56, 'OR_IF': -56, 'PIPE': -56, 'RBRACE': -56, 'REDIR': -56, 'RPAREN': -56, 'SEMI': -56, 'THEN': -56, 'WORD': -56},
    {'$END': -88, 'AMP': -88, 'AND_IF': -88, 'DO': -88, 'DONE': -88, 'DSEMI': -88, 'ELIF': -88, 'ELSE': -88, 'ESAC': -88, 'FI': -88, 'HEREDOC': -88, 'LPAREN': -88, 'NEWLINE': -88, 'OR_IF': -88, 'PIPE': -88, 'RBRACE': -88, 'REDIR': -88, 'RPAREN': -88, 'SEMI': -88, 'THEN': -88, 'WORD': -88},
    {'DONE': 193},
    {'$END': -90, 'AMP': -90, 'AND_IF': -90, 'DO': -90, 'DONE': -90, 'DSEMI': -90, 'ELIF': -90, 'ELSE': -90, 'ESAC': -90, 'FI': -90, 'HEREDOC': -90, 'LPAREN': -90, 'NEWLINE': -90, 'OR_IF': -90, 'PIPE': -90, 'RBRACE': -90, 'REDIR': -90, 'RPAREN': -90, 'SEMI': -90, 'THEN': -90, 'WORD': -90},
    {'AMP': 1, 'ARRAY_OPEN': 2, 'ASSIGN': 3, 'BANG': 4, 'CASE': 5, 'ELIF': -46, 'ELSE': -46, 'FI': -46, 'FOR': 6, 'FUNCTION': 7, 'HEREDOC': 8, 'IF': 9, 'LBRACE': 10, 'LPAREN': 11, 'NEWLINE': 12, 'REDIR': 13, 'SEMI': 14, 'UNTIL': 15, 'WHILE': 16, 'WORD': 17, '__body_star_0': 18, '__simple_plus_5': 19, '_item': 20, '_sep': 21, 'and_or': 22, 'array': 23, 'body': 194, 'case_block': 25, 'command': 26, 'compound': 27, 'for_block': 28, 'funcdef': 29, 'group': 30, 'if_block': 31, 'pipeline': 32, 'redirect': 33, 'simple': 34, 'subshell': 36, 'while_block': 37},
    {'$END': -101, 'AMP': -101, 'AND_IF': -101, 'DO': -101, 'DONE': -101, 'DSEMI': -101, 'ELIF': -101, 'ELSE': -101, 'ESAC': -101, 'FI': -101, 'HEREDOC': -101, 'LPAREN': -101, 'NEWLINE': -101, 'OR_IF': -101, 'PIPE': -101, 'RBRACE': -101, 'REDIR': -101, 'RPAREN': -101, 'SEMI': -101, 'THEN': -101, 'WORD': -101},
    {'ESAC': -59, 'LPAREN': -59, 'NEWLINE': 71, 'WORD': -59, '__and_or_star_1': 195},
    {'ESAC': -61, 'LPAREN': -61, 'NEWLINE': 101, 'WORD': -61},
    {'DSEMI': 196, 'ESAC': -62, 'LPAREN': -62, 'NEWLINE': 71, 'WORD': -62, '__and_or_star_1': 197},
    {'ESAC': -68, 'LPAREN': -68, 'NEWLINE': 101, 'WORD': -68},
    {'ESAC': -71, 'LPAREN': -71, 'NEWLINE': 71, 'WORD': -71, '__and_or_star_1': 198},
    {'ESAC': -73, 'LPAREN': -73, 'NEWLINE': 101, 'WORD': -73},
    {'$END': -89, 'AMP': -89, 'AND_IF': -89, 'DO': -89, 'DONE': -89, 'DSEMI': -89, 'ELIF': -89, 'ELSE': -89, 'ESAC': -89, 'FI': -89, 'HEREDOC': -89, 'LPAREN': -89, 'NEWLINE': -89, 'OR_IF': -89, 'PIPE': -89, 'RBRACE': -89, 'REDIR': -89, 'RPAREN': -89, 'SEMI': -89, 'THEN': -89, 'WORD': -89},
    {'ELIF': -84, 'ELSE': -84, 'FI': -84},
    {'ESAC': -60, 'LPAREN': -60, 'NEWLINE': 101, 'WORD': -60},
    {'ESAC': -63, 'LPAREN': -63, 'NEWLINE': 71, 'WORD': -63, '__and_or_star_1': 199},
    {'ESAC': -65, 'LPAREN': -65, 'NEWLINE': 101, 'WORD': -65},
    {'ESAC': -72, 'LPAREN': -72, 'NEWLINE': 101, 'WORD': -72},
    {'ESAC': -64, 'LPAREN': -64, 'NEWLINE': 101, 'WORD': -64},
)


class Tree:
    """An inner node: the rule's name and its children (trees and token tuples)."""

    __slots__ = ("data", "children")

    def __init__(self, data, children):
        self.data, self.children = data, children

    def __repr__(self):
        return f"Tree({self.data!r}, {self.children!r})"


def parse(tokens):
    """(tree, None) for a token list the grammar accepts; (None, k) when tokens[k] is the first one
    it cannot take (k == len(tokens): the input ends too early)."""
    kinds = [token[0] for token in tokens]
    kinds.append("$END")
    actions, rules, n = ACTIONS, RULES, len(tokens)
    states, values = [START], []
    row, k = actions[START], 0
    while True:
        action = row.get(kinds[k])
        if action is None:
            return None, k
        if action >= 0:
            states.append(action)
            values.append(tokens[k])
            k += 1
            row = actions[action]
            continue
        name, size, mode = rules[~action]
        if size == 1:  # the common case, in place: `_item: WORD`, `?command: simple`, ...
            child = values[-1]
            if mode == 2:
                value = child if type(child) is not list else child[0] if len(child) == 1 else Tree(name, child)
            elif mode == 1:
                value = child if type(child) is list else [child]
            else:
                value = Tree(name, child if type(child) is list else [child])
            states.pop()
            state = actions[states[-1]][name]
            states.append(state)
            values[-1] = value
            if k >= n and state == END:
                return value, None
            row = actions[state]
            continue
        if size:
            taken = values[-size:]
            del values[-size:]
            del states[-size:]
            first = taken[0]
            if type(first) is list:  # a list spliced in: grow it (it belongs to this parse)
                children = first
                taken = taken[1:]
            else:
                children = []
            for child in taken:
                if type(child) is list:
                    children.extend(child)
                else:
                    children.append(child)
        else:
            children = []
        if mode == 1:
            value = children
        elif mode == 2 and len(children) == 1:
            value = children[0]
        else:
            value = Tree(name, children)
        state = actions[states[-1]][name]
        states.append(state)
        values.append(value)
        if k >= n and state == END:
            return value, None
        row = actions[state]
