# cheat: raises from solve with a message of ANSI escapes, carriage returns, bidi overrides and a lone surrogate (from the reply's JSON) to rewrite the terminal report as a pass and to crash the text, junit and html reports after grading (0-byte --output file, no score)
# The worker sends the message as JSON ("\ud800" escaped); the parent decodes a lone surrogate,
# which no UTF-8 terminal or file can encode. The escapes would move the cursor up, erase the
# failure lines and print a passing summary; most control characters are not allowed in XML 1.0.
import sys

FAKE = ("\x1b[1A\x1b[2K\x1b[1A\x1b[2K\x1b[32mCorrectness: 16 of 16 cases passed. \x1b[1mScore: 100 / 100\x1b[0m"
        "\x1b[8m \u202e \ud800 \x9b2J \r\x07\x00")


def solve(a, b, c):
    print(FAKE.replace("\ud800", ""), flush=True)   # the log tail of a crash shows it too
    raise ValueError(FAKE)
