"""Small functions whose converted source is pinned by test_golden.py."""


def golden_if(x):
    if x > 0:
        x = x * 2
    else:
        x = -x
    return x


def golden_while(n):
    i = 0
    while i < n:
        i += 1
    return i


def golden_for(n):
    s = 0
    for i in range(n):
        s += i
    return s


def golden_break(n):
    i = 0
    while i < n:
        if i == 3:
            break
        i += 1
    return i


def golden_continue(n):
    s = 0
    for i in range(n):
        if i % 2 == 0:
            continue
        s += i
    return s


def golden_return(x):
    if x > 0:
        return 1
    return -1
