//! The PostgreSQL protocol's login of a directory user (`[ldap]`): the client is asked for
//! its password in clear text (inside TLS, which `[ldap]` requires of the server), and the
//! password is checked by a bind to the directory ([`crate::ldap`]). Nothing is stored.

use futures::{Sink, SinkExt};
use pgwire::api::auth::{
    finish_authentication, protocol_negotiation, save_startup_parameters_to_metadata,
    ServerParameterProvider,
};
use pgwire::api::{
    ClientInfo, PgWireConnectionState, PidSecretKeyGenerator, RandomPidSecretKeyGenerator,
    METADATA_USER,
};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::startup::Authentication;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};

use crate::sessions::{Refusal, Server};

/// One step of a directory user's login: the start-up message asks for the password, the
/// password message binds to the directory and, if it lets the user in, finishes the
/// login. A refused password is `InvalidPassword` (the same error a wrong local password
/// gives), its reason left in `refusal` for the audit trail.
pub(super) async fn step<C, P>(
    client: &mut C,
    message: PgWireFrontendMessage,
    server: &Server,
    parameters: &P,
    refusal: &mut Option<Refusal>,
) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: std::fmt::Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    P: ServerParameterProvider,
{
    match message {
        PgWireFrontendMessage::Startup(ref startup) => {
            protocol_negotiation(client, startup).await?;
            save_startup_parameters_to_metadata(client, startup);
            client.set_state(PgWireConnectionState::AuthenticationInProgress);
            client
                .send(PgWireBackendMessage::Authentication(
                    Authentication::CleartextPassword,
                ))
                .await?;
        }
        PgWireFrontendMessage::PasswordMessageFamily(password)
            if matches!(
                client.state(),
                PgWireConnectionState::AuthenticationInProgress
            ) =>
        {
            let password = password.into_password()?.password;
            let user = client
                .metadata()
                .get(METADATA_USER)
                .cloned()
                .unwrap_or_default();
            match server.login(&user, &password).await {
                Ok(_) => {
                    let (pid, secret_key) = RandomPidSecretKeyGenerator::default().generate(client);
                    client.set_pid_and_secret_key(pid, secret_key);
                    finish_authentication(client, parameters).await?;
                }
                Err(refused) => {
                    *refusal = Some(refused);
                    return Err(PgWireError::InvalidPassword(user));
                }
            }
        }
        _ => {}
    }
    Ok(())
}
