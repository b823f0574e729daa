"""Mail backends: one Protocol (`base.MailBackend`), chosen by `MAIL_BACKEND` in `service.create_backend`."""
