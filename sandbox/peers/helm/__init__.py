"""helm, built at its pin, and the chart rendered with it (`chart`)."""
