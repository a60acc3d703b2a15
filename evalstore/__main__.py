from evalstore.cli import app

app(prog_name="evalstore")
