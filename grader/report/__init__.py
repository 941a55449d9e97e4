"""The report formats of one grade (text, json, gradescope, junit, html) and the roofline plot."""
